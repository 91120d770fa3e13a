"""Model repository extension interop: `tritonclient` (HTTP and gRPC) lists the example server's models,
unloads one (and the ensemble that calls it, with unload_dependents), meets Triton's errors for it while it is
unloaded, and loads them back. A server of its own,
so that the other tests keep their models.
"""
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from conftest import start_server, stop_server


@pytest.fixture(scope="module")
def repo_server():
    running = start_server(env={"TSTRITON_MODEL_CONTROL_MODE": "explicit"})
    yield running
    stop_server(running)


# The status tritonclient's InferenceServerException reports: the HTTP status, or the gRPC status code's name.
NOT_FOUND = {"http": "404", "grpc": "StatusCode.NOT_FOUND"}
UNAVAILABLE = {"http": "503", "grpc": "StatusCode.UNAVAILABLE"}
INVALID = {"http": "400", "grpc": "StatusCode.INVALID_ARGUMENT"}


def client_for(protocol, server):
    if protocol == "http":
        return httpclient, httpclient.InferenceServerClient(server.http_url)
    return grpcclient, grpcclient.InferenceServerClient(server.grpc_url)


def index_of(protocol, client, ready=False):
    if protocol == "http":
        return {m["name"]: m for m in client.get_model_repository_index()
                if not ready or m["state"] == "READY"}
    reply = client.get_model_repository_index(as_json=True)
    return {m["name"]: m for m in reply.get("models", []) if not ready or m.get("state") == "READY"}


def add_sub(module, client):
    a = module.InferInput("a", [1, 4], "FP32")
    a.set_data_from_numpy(np.ones((1, 4), np.float32))
    b = module.InferInput("b", [1, 4], "FP32")
    b.set_data_from_numpy(np.ones((1, 4), np.float32))
    return client.infer("add_sub", [a, b]).as_numpy("add")


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_unload_and_load_back(repo_server, protocol):
    module, client = client_for(protocol, repo_server)
    models = index_of(protocol, client)
    assert {"add_sub", "ocr", "color_ensemble", "identity_fp32"} <= set(models)
    assert models["add_sub"]["state"] == "READY" and models["add_sub"]["version"] == "1"

    client.unload_model("add_sub")
    assert not client.is_model_ready("add_sub")
    assert client.is_server_ready()  # an unloaded model does not make the server unready
    entry = index_of(protocol, client)["add_sub"]
    assert entry["state"] == "UNAVAILABLE" and entry["reason"] == "unloaded"
    # As Triton: a known model with no ready version is NOT_FOUND, for inference, metadata and config alike.
    none = "Request for unknown model: 'add_sub' has no available versions"
    for call in (lambda: add_sub(module, client), lambda: client.get_model_metadata("add_sub"),
                 lambda: client.get_model_config("add_sub")):
        with pytest.raises(InferenceServerException) as refused:
            call()
        assert (refused.value.status(), refused.value.message()) == (NOT_FOUND[protocol], none)
    with pytest.raises(InferenceServerException) as refused:
        client.get_model_metadata("add_sub", model_version="1")
    assert (refused.value.status(), refused.value.message()) == (
        UNAVAILABLE[protocol], "Request for unknown model: 'add_sub' version 1 is not at ready state")
    with pytest.raises(InferenceServerException) as refused:
        client.get_model_metadata("never_bound")
    assert (refused.value.status(), refused.value.message()) == (
        INVALID[protocol], "Request for unknown model: 'never_bound' is not found")

    client.load_model("add_sub")
    assert client.is_model_ready("add_sub")
    np.testing.assert_array_equal(add_sub(module, client), np.full((1, 4), 2, np.float32))


def test_unload_dependents_takes_the_ensemble_along(repo_server):
    client = httpclient.InferenceServerClient(repo_server.http_url)
    config = client.get_model_config("color_ensemble")
    steps = [s["model_name"] for s in config["ensemble_scheduling"]["step"]]
    step = steps[0]
    client.unload_model(step, unload_dependents=True)
    try:
        assert not client.is_model_ready(step)
        assert not client.is_model_ready("color_ensemble")
    finally:
        client.load_model(step)
        client.load_model("color_ensemble")
    assert client.is_model_ready("color_ensemble")


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_what_cannot_be_done_is_refused(repo_server, protocol):
    _, client = client_for(protocol, repo_server)
    with pytest.raises(InferenceServerException, match="failed to load 'nope'"):
        client.load_model("nope")
    with pytest.raises(InferenceServerException, match="models are bound in code"):
        client.load_model("add_sub", config='{"max_batch_size": 8}')
    assert client.is_model_ready("add_sub")


# A repository model whose versions failed to build (a valid config, code that does not load): Triton keeps them in
# its model life cycle (unavailable, with the reason), so it is a known model with no available version. A model
# whose config.pbtxt is not valid never reaches the life cycle, and one never loaded in explicit mode is not there
# either: both are unknown.
BROKEN_CONFIG = 'backend: "tstriton"\ninput [ { name: "x" \n'
SCRIPT_CONFIG = """
backend: "tstriton"
max_batch_size: 0
input [ { name: "x", data_type: TYPE_FP32, dims: [ -1 ] } ]
output [ { name: "y", data_type: TYPE_FP32, dims: [ -1 ] } ]
"""
SCRIPT = """
module.exports = class Triple {
  execute(requests) {
    return requests.map((r) => ({ y: { shape: r.inputs.x.shape, data: r.inputs.x.data.map((v) => v * 3) } }));
  }
};
"""
BROKEN_SCRIPT = "throw new Error('this model does not load');\n"


@pytest.fixture()
def failing_repository(tmp_path):
    """The example server over a repository of three models that fail to load: `badcode` (its code throws) and
    `badconfig` (its config.pbtxt does not parse), loaded at start, and `later` (its code throws), not loaded until a
    test asks."""
    for name, config, script in (("badcode", SCRIPT_CONFIG, BROKEN_SCRIPT), ("badconfig", BROKEN_CONFIG, SCRIPT),
                                 ("later", SCRIPT_CONFIG, BROKEN_SCRIPT)):
        (tmp_path / name / "1").mkdir(parents=True)
        (tmp_path / name / "1" / "model.js").write_text(script)
        (tmp_path / name / "config.pbtxt").write_text(config)
    running = start_server(env={"TSTRITON_MODEL_CONTROL_MODE": "explicit", "TSTRITON_MODEL_REPOSITORY": str(tmp_path),
                                "TSTRITON_LOAD_MODEL": "badcode,badconfig"})
    yield running, tmp_path
    stop_server(running)


def infer_x(module, client, model):
    x = module.InferInput("x", [2], "FP32")
    x.set_data_from_numpy(np.array([1, 2], np.float32))
    return client.infer(model, [x]).as_numpy("y")


def refusal(call):
    with pytest.raises(InferenceServerException) as refused:
        call()
    return refused.value.status(), refused.value.message()


def test_a_failed_load_is_a_known_model_with_no_version(failing_repository):
    server, root = failing_repository
    for protocol in ("http", "grpc"):
        module, client = client_for(protocol, server)
        index = index_of(protocol, client)
        assert (index["badcode"]["state"], index["badconfig"]["state"]) == ("UNAVAILABLE", "UNAVAILABLE")
        none = "Request for unknown model: 'badcode' has no available versions"
        for call in (lambda: infer_x(module, client, "badcode"), lambda: client.get_model_metadata("badcode"),
                     lambda: client.get_model_config("badcode")):
            assert refusal(call) == (NOT_FOUND[protocol], none)
        assert refusal(lambda: client.get_model_metadata("badcode", "1")) == (
            UNAVAILABLE[protocol], "Request for unknown model: 'badcode' version 1 is not at ready state")
        assert not client.is_model_ready("badcode")
        for name in ("badconfig", "later"):
            assert refusal(lambda: infer_x(module, client, name)) == (
                INVALID[protocol], f"Request for unknown model: '{name}' is not found")

    # A load whose version fails to build makes it known; fixed, a load serves it.
    http = httpclient.InferenceServerClient(server.http_url)
    grpc = grpcclient.InferenceServerClient(server.grpc_url)
    with pytest.raises(InferenceServerException):
        http.load_model("later")
    assert refusal(lambda: infer_x(grpcclient, grpc, "later")) == (
        NOT_FOUND["grpc"], "Request for unknown model: 'later' has no available versions")
    (root / "later" / "1" / "model.js").write_text(SCRIPT)
    grpc.load_model("later")
    np.testing.assert_array_equal(infer_x(httpclient, http, "later"), np.array([3, 6], np.float32))
