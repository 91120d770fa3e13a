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
