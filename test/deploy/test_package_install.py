"""The packed package installed into an empty project, as a user installs it: `npm install tstriton` with no
`.npmrc`, so nothing may download from outside the npm registry.

onnxruntime-node is an optional peer dependency: the install leaves it out (its install script downloads the
CUDA libraries from outside the registry and fails where that is unreachable), a server of TypeScript functions
runs without it, and serving an ONNX model fails with an error that names the package and how to install it.
Installing it then with `npm_config_onnxruntime_node_install=skip` — the setting its script reads
(node_modules/onnxruntime-node/script/install.js: `--onnxruntime-node-install=skip`, as the environment
variable npm passes it) and the one the README gives for CPU-only and offline installs — adds only the CPU
binaries in the npm package, and the same ONNX model then serves and infers.

Slow steps (npm pack, npm install) run with generous timeouts and `--prefer-offline`; the package is packed from
a fresh clone of the repository's HEAD, never built, as a user's `npm pack` of a checkout would be.
"""
import json
import os
import shutil
import subprocess

import numpy as np
import pytest
import tritonclient.http as httpclient

from deploy_support import ROOT, start_server, stop_server

MISSING_ORT = ("serving ONNX models needs the 'onnxruntime-node' package: npm install onnxruntime-node "
               "(set ONNXRUNTIME_NODE_INSTALL=skip to skip its CUDA download)")
NPM_FLAGS = ["--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"]
ONNX_MODEL = ROOT / "test" / "fixtures" / "onnx" / "identity_fp32.onnx"
MANIFEST = json.loads((ROOT / "package.json").read_text())

# A server of TypeScript-style functions in plain JavaScript, through the package's public API only.
SERVER_JS = """
const { Triton, tensor } = require('tstriton');
const { batch } = require('tstriton/decorators');

const triton = new Triton();
triton.bind({
  modelName: 'add_one',
  inferFunc: batch(async ({ x }) => ({ y: tensor('FP32', x.shape, x.data.map((v) => v + 1)) })),
  inputs: [{ name: 'x', dtype: 'FP32', shape: [-1] }],
  outputs: [{ name: 'y', dtype: 'FP32', shape: [-1] }],
  config: { maxBatchSize: 8 },
});
void triton.serve().then((code) => process.exit(code));
"""

# Every public entry point, type-checked against the package's declarations (skipLibCheck off).
CONSUMER_TS = """
import { Triton, onnxModel, tensor, type OnnxModelInit, type OnnxModelSpec, type Tensor } from 'tstriton';
import { batch } from 'tstriton/decorators';
import { ModelClient } from 'tstriton/client';
import { toPbtxt } from 'tstriton/config';

const init: OnnxModelInit = { path: 'model.onnx', devices: ['cpu'] };
export const declare = (): OnnxModelSpec => onnxModel(init);
const triton = new Triton();
triton.bind({
  modelName: 'add_one',
  inferFunc: batch(async ({ x }: Record<string, Tensor>) => ({ y: tensor('FP32', x!.shape, (x!.data as Float32Array).map((v) => v + 1)) })),
  inputs: [{ name: 'x', dtype: 'FP32', shape: [-1] }],
  outputs: [{ name: 'y', dtype: 'FP32', shape: [-1] }],
});
export { ModelClient, toPbtxt };
"""


def is_npm_setting(name):
    """True for the npm settings an enclosing `npm test` exports (its `.npmrc` skip among them) and for
    onnxruntime-node's own install variables: none of them is in a user's shell."""
    return name.lower().startswith(("npm_config_", "npm_package_", "npm_lifecycle_")) or name.startswith("ONNXRUNTIME_NODE_INSTALL")


def user_env(**extra):
    """The environment of a user's shell, `extra` on top."""
    env = {k: v for k, v in os.environ.items() if not is_npm_setting(k)}
    env.update(extra)
    return env


@pytest.fixture
def user_shell(monkeypatch):
    """This process's environment as a user's shell, for the servers start_server starts from it."""
    for name in [k for k in os.environ if is_npm_setting(k)]:
        monkeypatch.delenv(name)


def npm(args, cwd, timeout=600, **env):
    return subprocess.run(["npm", *args], cwd=cwd, env=user_env(**env), capture_output=True, text=True,
                          timeout=timeout)


def ports_env():
    return {"TSTRITON_HTTP_PORT": "0", "TSTRITON_GRPC_PORT": "0", "TSTRITON_METRICS_PORT": "0"}


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """An empty project (a package.json, no .npmrc) with the package installed, packed from a clone that was never
    built: `npm pack` builds it (prepack)."""
    clone = tmp_path_factory.mktemp("clone") / "tstriton"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True, timeout=120)
    assert not (clone / "dist").exists()
    (clone / "node_modules").symlink_to(ROOT / "node_modules")
    where = tmp_path_factory.mktemp("user-project")
    packed = subprocess.run(["npm", "pack", "--silent", "--pack-destination", str(where)], cwd=clone,
                            env=user_env(), capture_output=True, text=True, check=True,
                            timeout=600).stdout.strip().splitlines()[-1]
    (where / "package.json").write_text(json.dumps({"name": "user-project", "version": "1.0.0", "private": True}))
    assert not (where / ".npmrc").exists()
    installed = npm(["install", *NPM_FLAGS, f"./{packed}"], cwd=where)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    shutil.copy(ONNX_MODEL, where / "model.onnx")
    (where / "server.js").write_text(SERVER_JS)
    return where


@pytest.fixture(scope="module")
def with_onnxruntime(project, tmp_path_factory):
    """The same project, copied, with onnxruntime-node added as the README says for a CPU-only/offline install."""
    where = tmp_path_factory.mktemp("user-project-onnx") / "project"
    shutil.copytree(project, where, symlinks=True)
    version = MANIFEST["peerDependencies"]["onnxruntime-node"]
    installed = npm(["install", *NPM_FLAGS, f"onnxruntime-node@{version}"], cwd=where,
                    npm_config_onnxruntime_node_install="skip")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return where


def infer(server, model, name, x, output):
    client = httpclient.InferenceServerClient(server.http_url)
    tensor = httpclient.InferInput(name, list(x.shape), "FP32")
    tensor.set_data_from_numpy(x)
    return client.infer(model, [tensor]).as_numpy(output)


def test_onnxruntime_is_an_optional_peer_dependency():
    assert "onnxruntime-node" not in MANIFEST["dependencies"]
    assert MANIFEST["peerDependenciesMeta"]["onnxruntime-node"] == {"optional": True}
    assert MANIFEST["devDependencies"]["onnxruntime-node"] == MANIFEST["peerDependencies"]["onnxruntime-node"]


def test_install_without_npmrc_leaves_onnxruntime_out(project):
    assert (project / "node_modules" / "tstriton" / "dist" / "lib" / "index.js").exists()
    assert not (project / "node_modules" / "onnxruntime-node").exists()
    assert not (project / "node_modules" / "onnxruntime-common").exists()


def test_typescript_functions_serve_without_onnxruntime(project, user_shell):
    server = start_server(command=["node", "server.js"], cwd=project, env=ports_env(), timeout=60)
    try:
        x = np.array([[1, 2, 3], [-1.5, 0, 41]], np.float32)
        np.testing.assert_array_equal(infer(server, "add_one", "x", x, "y"), x + 1)
    finally:
        assert stop_server(server) == 0, "".join(server.log)


def test_serving_onnx_without_onnxruntime_names_the_package(project):
    run = subprocess.run(["npx", "--no-install", "tstriton", "serve", "model.onnx"], cwd=project,
                         env=user_env(**ports_env()), capture_output=True, text=True, timeout=120)
    assert run.returncode != 0, run.stdout + run.stderr
    assert MISSING_ORT in run.stderr, run.stdout + run.stderr


def test_public_types_need_no_onnxruntime(project, tmp_path):
    """The declarations of every entry point type-check with skipLibCheck off where onnxruntime-node is absent
    (in a copy, so that the project keeps only what `npm install tstriton` put there)."""
    where = tmp_path / "project"
    shutil.copytree(project, where, symlinks=True)
    tools = [f"typescript@{MANIFEST['devDependencies']['typescript']}", f"@types/node@{MANIFEST['devDependencies']['@types/node']}"]
    installed = npm(["install", *NPM_FLAGS, *tools], cwd=where)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert not (where / "node_modules" / "onnxruntime-node").exists()
    (where / "consumer.ts").write_text(CONSUMER_TS)
    # noImplicitAny off: the declarations import express, whose types (@types/express) a user may not have.
    checked = subprocess.run(["npx", "--no-install", "tsc", "--noEmit", "--strict", "--noImplicitAny", "false",
                              "--skipLibCheck", "false", "--module", "nodenext", "--moduleResolution", "nodenext",
                              "--types", "node", "consumer.ts"],
                             cwd=where, env=user_env(), capture_output=True, text=True, timeout=300)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_onnx_serves_once_onnxruntime_is_installed_without_its_cuda_download(with_onnxruntime, user_shell):
    ort = with_onnxruntime / "node_modules" / "onnxruntime-node"
    assert json.loads((ort / "package.json").read_text())["version"]
    binaries = ort / "bin" / "napi-v6" / "linux" / "x64"
    if binaries.exists():  # the CPU binaries ship in the package; the CUDA ones were skipped
        assert (binaries / "onnxruntime_binding.node").exists()
        assert not (binaries / "libonnxruntime_providers_cuda.so").exists()
    server = start_server(command=["npx", "--no-install", "tstriton", "serve", "model.onnx"], cwd=with_onnxruntime,
                          env=ports_env(), timeout=90)
    try:
        x = np.arange(2 * 16, dtype=np.float32).reshape(2, 16) - 7.25
        np.testing.assert_array_equal(infer(server, "model", "INPUT0", x, "OUTPUT0"), x)
    finally:
        stop_server(server)
