"""BLS across processes: a second server's model calls `add_sub` on the example server over HTTP and gRPC."""
import numpy as np
import pytest
import tritonclient.http as httpclient

from conftest import start_server, stop_server


@pytest.mark.parametrize("scheme", ["http", "grpc"])
def test_bls_step_on_another_server_process(server, scheme):
    upstream = f"{scheme}://{server.http_url if scheme == 'http' else server.grpc_url}"
    proxy = start_server("test/interop/servers/bls-proxy.js", env={"UPSTREAM_URL": upstream, "TSTRITON_ALLOW_GRPC": "false"})
    try:
        client = httpclient.InferenceServerClient(proxy.http_url)
        a = np.arange(6, dtype=np.float32).reshape(2, 3)
        b = np.full((2, 3), 10, dtype=np.float32)
        inputs = [httpclient.InferInput("a", [2, 3], "FP32"), httpclient.InferInput("b", [2, 3], "FP32")]
        inputs[0].set_data_from_numpy(a)
        inputs[1].set_data_from_numpy(b)
        result = client.infer("proxy_add_sub", inputs)
        np.testing.assert_array_equal(result.as_numpy("sum"), a + b)
        # the upstream model really ran: its statistics count the forwarded request
        upstream_client = httpclient.InferenceServerClient(server.http_url)
        stats = upstream_client.get_inference_statistics("add_sub")["model_stats"][0]
        assert stats["inference_stats"]["success"]["count"] >= 1
    finally:
        assert stop_server(proxy) == 0


def test_bls_errors_name_the_remote_callee(server):
    proxy = start_server("test/interop/servers/bls-proxy.js", env={"UPSTREAM_URL": "http://127.0.0.1:9", "TSTRITON_ALLOW_GRPC": "false"})
    try:
        client = httpclient.InferenceServerClient(proxy.http_url)
        inputs = [httpclient.InferInput("a", [1, 1], "FP32"), httpclient.InferInput("b", [1, 1], "FP32")]
        for i in inputs:
            i.set_data_from_numpy(np.ones((1, 1), np.float32))
        with pytest.raises(httpclient.InferenceServerException) as err:
            client.infer("proxy_add_sub", inputs)
        assert "calling 'add_sub' at http://127.0.0.1:9" in err.value.message()
    finally:
        stop_server(proxy)
