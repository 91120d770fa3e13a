"""A Triton-layout model repository served by `npx tstriton serve --model-repository DIR` from a fresh install
of the packed package, driven by tritonclient over HTTP and gRPC.

The repository is written here: ONNX models made with `onnx` (three versions of one model under
`version_policy: { latest { num_versions: 2 } }` with onnxruntime session settings, a model with no config.pbtxt), an ensemble wired in
config.pbtxt, and a model.ts script model. Every config.pbtxt also goes through Triton's own parser
(`text_format` into `model_config_pb2.ModelConfig`), the configs the server returns are read back into
`ModelConfig`, and every answer is checked against onnxruntime run on the same files.
"""
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from google.protobuf import json_format, text_format
from onnx import TensorProto, helper, numpy_helper
from tritonclient.grpc import model_config_pb2
from tritonclient.utils import InferenceServerException

from conftest import ROOT, start_server, stop_server

SCALED_CONFIG = """
name: "scaled"
platform: "onnxruntime_onnx"
max_batch_size: 8
version_policy: { latest { num_versions: 2 } }
input [ { name: "x", data_type: TYPE_FP32, dims: [ 4 ] } ]
output [ { name: "y", data_type: TYPE_FP32, dims: [ 4 ] } ]
dynamic_batching { max_queue_delay_microseconds: 200 }
instance_group [ { kind: KIND_CPU, count: 1 } ]
optimization { graph { level: 1 } }
parameters { key: "intra_op_thread_count", value: { string_value: "1" } }
parameters { key: "session.intra_op.allow_spinning", value: { string_value: "0" } }
"""

CHAIN_CONFIG = """
name: "chain"
platform: "ensemble"
max_batch_size: 4
input [ { name: "IN", data_type: TYPE_FP32, dims: [ 4 ] } ]
output [ { name: "OUT", data_type: TYPE_FP32, dims: [ 4 ] } ]
ensemble_scheduling {
  step [
    { model_name: "scaled", model_version: -1, input_map { key: "x", value: "IN" }, output_map { key: "y", value: "mid" } },
    { model_name: "plusone", model_version: -1, input_map { key: "x", value: "mid" }, output_map { key: "y", value: "OUT" } }
  ]
}
"""

SCRIPT_CONFIG = """
backend: "tstriton"
max_batch_size: 0
input [ { name: "x", data_type: TYPE_FP32, dims: [ -1 ] } ]
output [ { name: "y", data_type: TYPE_FP32, dims: [ -1 ] } ]
parameters { key: "factor", value: { string_value: "10" } }
"""

SCRIPT = """
import type { Request, Response, ScriptModelArgs } from 'tstriton';

export default class Scale {
  private factor = 1;
  initialize(args: ScriptModelArgs): void {
    const parameters = args.modelConfig.parameters as Record<string, { string_value: string }>;
    this.factor = Number(parameters.factor?.string_value ?? 1);
  }
  execute(requests: Request[]): Response[] {
    return requests.map((r) => {
      const x = r.inputs.x!;
      return { y: { shape: x.shape, data: (x.data as Float32Array).map((v) => v * this.factor) } };
    });
  }
}
"""


def onnx_model(path, op, constant):
    """y = x <op> constant, x and y FP32 [batch, 4]."""
    c = numpy_helper.from_array(np.array(constant, np.float32), "c")
    graph = helper.make_graph(
        [helper.make_node(op, ["x", "c"], ["y"])], "m",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])],
        initializer=[c])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))


def build_repository(root):
    for version in (1, 2, 3):
        onnx_model(root / "scaled" / str(version) / "model.onnx", "Mul", float(version))
    (root / "scaled" / "config.pbtxt").write_text(SCALED_CONFIG)
    onnx_model(root / "plusone" / "1" / "model.onnx", "Add", 1.0)
    (root / "chain" / "1").mkdir(parents=True)
    (root / "chain" / "config.pbtxt").write_text(CHAIN_CONFIG)
    (root / "script" / "1").mkdir(parents=True)
    (root / "script" / "1" / "model.ts").write_text(SCRIPT)
    (root / "script" / "config.pbtxt").write_text(SCRIPT_CONFIG)


def run_onnx(path, x):
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


@pytest.fixture(scope="module")
def fresh_install(tmp_path_factory):
    """The packed package installed in an empty project, with onnxruntime-node (an optional peer dependency) for the
    ONNX models; ONNXRUNTIME_NODE_INSTALL=skip skips its CUDA download. No TypeScript: the package's own loader
    (esbuild, a dependency) compiles the model.ts script."""
    where = tmp_path_factory.mktemp("install")
    packed = subprocess.run(["npm", "pack", "--silent", "--pack-destination", str(where)], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
    (where / "package.json").write_text(json.dumps({"name": "fresh-install", "version": "1.0.0", "private": True}))
    manifest = json.loads((ROOT / "package.json").read_text())
    onnxruntime = manifest["peerDependencies"]["onnxruntime-node"]
    subprocess.run(["npm", "install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error",
                    str(where / packed), f"onnxruntime-node@{onnxruntime}"],
                   cwd=where, env={**os.environ, "ONNXRUNTIME_NODE_INSTALL": "skip"}, check=True, timeout=600)
    return where


@pytest.fixture(scope="module")
def repository(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    build_repository(root)
    return root


@pytest.fixture(scope="module")
def served(fresh_install, repository):
    running = start_server(command=["npx", "--no-install", "tstriton", "serve", "--model-repository", str(repository)],
                           cwd=fresh_install, timeout=60)
    yield running
    stop_server(running)


def clients(server):
    return {"http": httpclient.InferenceServerClient(server.http_url),
            "grpc": grpcclient.InferenceServerClient(server.grpc_url)}


def test_every_config_parses_in_tritons_own_parser(repository):
    for config in repository.glob("*/config.pbtxt"):
        parsed = text_format.Parse(config.read_text(), model_config_pb2.ModelConfig())
        assert parsed.input, config


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_index_lists_every_model_and_served_version(served, protocol):
    client = clients(served)[protocol]
    if protocol == "http":
        entries = client.get_model_repository_index()
    else:
        entries = json_format.MessageToDict(client.get_model_repository_index(), preserving_proto_field_name=True)["models"]
    ready = sorted((e["name"], e.get("version", "")) for e in entries if e.get("state") == "READY")
    assert ready == [("chain", "1"), ("plusone", "1"), ("scaled", "2"), ("scaled", "3"), ("script", "1")]


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_metadata_lists_the_versions_the_policy_serves(served, protocol):
    client = clients(served)[protocol]
    metadata = client.get_model_metadata("scaled")
    versions = metadata["versions"] if protocol == "http" else list(metadata.versions)
    assert versions == ["2", "3"]
    assert not client.is_model_ready("scaled", "1")
    assert client.is_model_ready("scaled", "2") and client.is_model_ready("scaled", "3")


def config_of(client, protocol, name):
    """The served config as Triton's ModelConfig message (HTTP's JSON parsed by json_format, which refuses unknown fields)."""
    if protocol == "http":
        return json_format.ParseDict(client.get_model_config(name), model_config_pb2.ModelConfig())
    return client.get_model_config(name).config


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_configs_read_back_as_triton_model_configs(served, protocol):
    client = clients(served)[protocol]
    scaled = config_of(client, protocol, "scaled")
    assert scaled.max_batch_size == 8
    assert scaled.version_policy.latest.num_versions == 2
    assert scaled.dynamic_batching.max_queue_delay_microseconds == 200
    # The onnxruntime backend's session settings, as written (docs/onnx.md#session-settings-in-a-model-repository).
    assert scaled.optimization.graph.level == 1
    assert {k: v.string_value for k, v in scaled.parameters.items()} == {
        "intra_op_thread_count": "1", "session.intra_op.allow_spinning": "0"}
    plusone = config_of(client, protocol, "plusone")  # completed from the ONNX file
    assert plusone.platform == "onnxruntime_onnx"
    assert [(t.name, t.data_type, list(t.dims)) for t in plusone.input] == [("x", model_config_pb2.TYPE_FP32, [4])]
    assert plusone.max_batch_size == 4
    chain = config_of(client, protocol, "chain")
    assert chain.platform == "ensemble"
    assert [s.model_name for s in chain.ensemble_scheduling.step] == ["scaled", "plusone"]
    script = config_of(client, protocol, "script")
    assert script.backend == "tstriton"
    assert script.parameters["factor"].string_value == "10"


def infer(module, client, model, x, version="", input_name="x", output_name="y"):
    inp = module.InferInput(input_name, list(x.shape), "FP32")
    inp.set_data_from_numpy(x)
    return client.infer(model, [inp], model_version=version).as_numpy(output_name)


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_every_model_and_version_answers_as_onnxruntime_does(served, repository, protocol):
    module = httpclient if protocol == "http" else grpcclient
    client = clients(served)[protocol]
    x = np.random.default_rng(7).standard_normal((3, 4)).astype(np.float32)
    for version in ("2", "3"):
        expected = run_onnx(repository / "scaled" / version / "model.onnx", x)
        np.testing.assert_array_equal(infer(module, client, "scaled", x, version), expected)
    np.testing.assert_array_equal(infer(module, client, "scaled", x), run_onnx(repository / "scaled" / "3" / "model.onnx", x))
    np.testing.assert_array_equal(infer(module, client, "plusone", x), run_onnx(repository / "plusone" / "1" / "model.onnx", x))
    chained = run_onnx(repository / "plusone" / "1" / "model.onnx", run_onnx(repository / "scaled" / "3" / "model.onnx", x))
    np.testing.assert_array_equal(infer(module, client, "chain", x, input_name="IN", output_name="OUT"), chained)
    v = x[0]
    np.testing.assert_array_equal(infer(module, client, "script", v), v * np.float32(10))
    with pytest.raises(InferenceServerException, match="version 1"):
        infer(module, client, "scaled", x, "1")


@pytest.fixture()
def explicit(fresh_install, repository):
    running = start_server(command=["npx", "--no-install", "tstriton", "serve", "--model-repository", str(repository),
                                    "--model-control-mode", "explicit", "--load-model", "scaled"],
                           cwd=fresh_install, timeout=60)
    yield running
    stop_server(running)


def test_explicit_mode_loads_only_what_it_is_told(explicit, repository):
    client = clients(explicit)["http"]
    assert client.is_model_ready("scaled")
    assert not client.is_model_ready("plusone")
    client.load_model("plusone")
    assert client.is_model_ready("plusone")
    override = {"platform": "onnxruntime_onnx", "max_batch_size": 2}
    client.load_model("plusone", config=json.dumps(override))
    assert client.get_model_config("plusone")["max_batch_size"] == 2
    grpc = clients(explicit)["grpc"]
    model = (repository / "scaled" / "2" / "model.onnx").read_bytes()
    grpc.load_model("uploaded", config=json.dumps({"platform": "onnxruntime_onnx", "max_batch_size": 4}),
                    files={"file:1/model.onnx": model})
    x = np.ones((1, 4), np.float32)
    np.testing.assert_array_equal(infer(grpcclient, grpc, "uploaded", x), x * 2)
    with pytest.raises(InferenceServerException, match="field 'bogus' is not supported"):
        client.load_model("plusone", config=json.dumps({"max_batch_size": 2, "bogus": 1}))
    assert client.is_model_ready("plusone")
