"""Restricted APIs and model control mode, driven by `tritonclient` over HTTP and gRPC.

A server of its own with `httpRestrictedApi` / `grpcRestrictedProtocol` set from the environment, as an
operator would set them; the session's default server shows that load/unload are refused without
`explicit` model control.
"""
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from conftest import start_server, stop_server

SPEC = "model-repository,logging:admin-key=secret"


@pytest.fixture(scope="module")
def restricted_server():
    running = start_server(env={"TSTRITON_MODEL_CONTROL_MODE": "explicit",
                                "TSTRITON_HTTP_RESTRICTED_API": SPEC,
                                "TSTRITON_GRPC_RESTRICTED_PROTOCOL": SPEC})
    yield running
    stop_server(running)


def add_sub(module, client):
    a = module.InferInput("a", [1, 4], "FP32")
    a.set_data_from_numpy(np.full((1, 4), 3, np.float32))
    b = module.InferInput("b", [1, 4], "FP32")
    b.set_data_from_numpy(np.ones((1, 4), np.float32))
    return client.infer("add_sub", [a, b]).as_numpy("add")


def clients(protocol, server):
    if protocol == "http":
        return httpclient, httpclient.InferenceServerClient(server.http_url), {"admin-key": "secret"}
    return grpcclient, grpcclient.InferenceServerClient(server.grpc_url), {"triton-grpc-protocol-admin-key": "secret"}


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_unload_needs_the_header(restricted_server, protocol):
    module, client, headers = clients(protocol, restricted_server)
    expected = ("This API is restricted, expecting header 'admin-key'" if protocol == "http"
                else "This protocol is restricted, expecting header 'triton-grpc-protocol-admin-key'")
    with pytest.raises(InferenceServerException) as refused:
        client.unload_model("add_sub")
    assert expected in str(refused.value)
    if protocol == "http":
        assert refused.value.status() == "403"
    else:
        assert refused.value.status() == "StatusCode.UNAVAILABLE"
    with pytest.raises(InferenceServerException, match="restricted"):
        client.unload_model("add_sub", headers={next(iter(headers)): "wrong"})
    assert client.is_model_ready("add_sub")

    # Inference is not in a restricted group.
    np.testing.assert_array_equal(add_sub(module, client), np.full((1, 4), 4, np.float32))

    client.unload_model("add_sub", headers=headers)
    assert not client.is_model_ready("add_sub")
    client.load_model("add_sub", headers=headers)
    assert client.is_model_ready("add_sub")


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_logging_is_restricted_too(restricted_server, protocol):
    _, client, headers = clients(protocol, restricted_server)
    with pytest.raises(InferenceServerException, match="restricted"):
        client.get_log_settings()
    settings = client.get_log_settings(headers=headers)
    if protocol == "grpc":
        settings = client.get_log_settings(headers=headers, as_json=True)["settings"]
    assert "log_info" in settings


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_default_model_control_mode_refuses_load_and_unload(server, protocol):
    module, client, _ = clients(protocol, server)
    for action in (client.unload_model, client.load_model):
        with pytest.raises(InferenceServerException, match="explicit model load / unload is not allowed if polling is enabled"):
            action("add_sub")
    assert client.is_model_ready("add_sub")
    np.testing.assert_array_equal(add_sub(module, client), np.full((1, 4), 4, np.float32))
