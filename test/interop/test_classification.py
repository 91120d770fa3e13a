"""Classification extension interop: `tritonclient` (HTTP and gRPC) asking for `class_count` on an output of
the example server's `add_sub` (add = a + b, FP32 [1, 16]) gets BYTES [1, count] of "<value>:<index>", highest
value first, as Triton answers.
"""
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException


def infer(protocol, server, class_count, binary=True):
    module = httpclient if protocol == "http" else grpcclient
    client = module.InferenceServerClient(server.http_url if protocol == "http" else server.grpc_url)
    a = np.array([[3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3]], dtype=np.float32)
    b = np.zeros((1, 16), dtype=np.float32)
    inputs = [module.InferInput("a", [1, 16], "FP32"), module.InferInput("b", [1, 16], "FP32")]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(b)
    kwargs = {"binary_data": binary} if protocol == "http" else {}
    outputs = [module.InferRequestedOutput("add", class_count=class_count, **kwargs), module.InferRequestedOutput("sub", **kwargs)]
    return client.infer("add_sub", inputs, outputs=outputs), a


@pytest.mark.parametrize("protocol,binary", [("http", True), ("http", False), ("grpc", True)])
def test_top_classes(server, protocol, binary):
    result, a = infer(protocol, server, 3, binary)
    classes = result.as_numpy("add")
    assert classes.shape == (1, 3)
    decoded = [c.decode() if isinstance(c, bytes) else c for c in classes[0]]
    # 9 appears at indices 5, 12 and 14: ties keep index order.
    assert decoded == ["9.000000:5", "9.000000:12", "9.000000:14"]
    # Outputs without class_count come back as tensors.
    np.testing.assert_array_equal(result.as_numpy("sub"), a)


def test_server_metadata_lists_the_extension(server):
    meta = httpclient.InferenceServerClient(server.http_url).get_server_metadata()
    assert "classification" in meta["extensions"]


def test_negative_count_is_refused(server):
    client = httpclient.InferenceServerClient(server.http_url)
    a = httpclient.InferInput("a", [1, 16], "FP32")
    a.set_data_from_numpy(np.zeros((1, 16), np.float32))
    b = httpclient.InferInput("b", [1, 16], "FP32")
    b.set_data_from_numpy(np.zeros((1, 16), np.float32))
    out = httpclient.InferRequestedOutput("add")
    out._parameters["classification"] = -2
    with pytest.raises(InferenceServerException, match="'classification' must be a non-negative integer"):
        client.infer("add_sub", [a, b], outputs=[out])
