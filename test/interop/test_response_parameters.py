"""Response parameters interop: a callable's response parameters reach `tritonclient` over HTTP
(`get_response()['parameters']`) and gRPC (`get_response().parameters`), streamed gRPC responses included."""
import queue

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from conftest import start_server, stop_server


@pytest.fixture(scope="module")
def observability():
    running = start_server("test/interop/servers/observability.js", env={"OBSERVABILITY_WORKER_MODEL": "0"})
    yield running
    assert stop_server(running) == 0


def echo_input(module, rows):
    x = module.InferInput("x", [rows, 3], "FP32")
    x.set_data_from_numpy(np.arange(rows * 3, dtype=np.float32).reshape(rows, 3))
    return x


def test_http_response_parameters(observability):
    client = httpclient.InferenceServerClient(observability.http_url)
    result = client.infer("echo", [echo_input(httpclient, 2)])
    assert result.get_response()["parameters"] == {"rows": 2, "source": "echo", "exact": True, "ratio": 0.5}
    assert result.as_numpy("y").shape == (2, 3)


def test_grpc_response_parameters(observability):
    client = grpcclient.InferenceServerClient(observability.grpc_url)
    params = client.infer("echo", [echo_input(grpcclient, 1)]).get_response().parameters
    assert params["rows"].int64_param == 1
    assert params["source"].string_param == "echo"
    assert params["exact"].bool_param is True
    assert params["ratio"].double_param == 0.5


def test_streamed_grpc_response_parameters(observability):
    client = grpcclient.InferenceServerClient(observability.grpc_url)
    results = queue.Queue()
    client.start_stream(callback=lambda result, error: results.put((result, error)))
    text = grpcclient.InferInput("TEXT", [1], "BYTES")
    text.set_data_from_numpy(np.array([b"one two three"], dtype=np.object_))
    client.async_stream_infer("words", [text])
    seen = []
    for _ in range(3):
        result, error = results.get(timeout=10)
        assert error is None
        params = result.get_response().parameters
        seen.append((result.as_numpy("WORD")[0], params["index"].int64_param, params["last"].bool_param))
    client.stop_stream()
    assert seen == [(b"one", 0, False), (b"two", 1, False), (b"three", 2, True)]
