"""gRPC interop: the real `tritonclient.grpc` (and its generated stubs, for requests a client would not
send) against the real example server (`dist/examples/serve.js`).

Models served: `add_sub` (a, b FP32 [-1] -> add, sub) and `identity_<dtype>` (INPUT0 -> OUTPUT0) for every
KServe datatype, all with max_batch_size 64.
"""
import json
import queue
import urllib.request

import grpc
import ml_dtypes
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from google.protobuf import json_format
from tritonclient.grpc import model_config_pb2, service_pb2, service_pb2_grpc
from tritonclient.utils import InferenceServerException, triton_to_np_dtype

ALL_DTYPES = ["BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64",
              "FP16", "FP32", "FP64", "BYTES", "BF16"]

# Eight values per datatype, at the edges of each type: min/max, integers beyond 2^53, -0.0, subnormals,
# embedded NULs.
SAMPLES = {
    "BOOL": [True, False, True, True, False, False, True, False],
    "UINT8": [0, 1, 127, 128, 200, 254, 255, 17],
    "UINT16": [0, 1, 255, 256, 32768, 65534, 65535, 1234],
    "UINT32": [0, 1, 2**16, 2**31, 2**32 - 2, 2**32 - 1, 123456789, 7],
    "UINT64": [0, 1, 2**53, 2**53 + 1, 2**63, 2**64 - 2, 2**64 - 1, 12345678901234567891],
    "INT8": [-128, -127, -1, 0, 1, 126, 127, 42],
    "INT16": [-32768, -32767, -1, 0, 1, 32766, 32767, 1000],
    "INT32": [-2**31, -2**31 + 1, -1, 0, 1, 2**31 - 2, 2**31 - 1, 123456],
    "INT64": [-(2**63), -(2**53) - 1, -1, 0, 2**53 + 1, 2**62 + 1, 2**63 - 2, 2**63 - 1],
    "FP16": [0.0, -0.0, 1.0, -2.5, 65504.0, -65504.0, 6e-8, 3.140625],
    "FP32": [0.0, -0.0, -2.5, 0.1, 3.4028235e38, -1.17549435e-38, 1e-45, 1 / 3],
    "FP64": [0.0, -0.0, 0.1, 1.7976931348623157e308, -2.2250738585072014e-308, 5e-324, 1e100, 1 / 3],
    "BF16": [1.0, -2.5, 0.15625, 0.0, -0.0, 256.0, 0.0078125, 3.3895313892515355e38],
    "BYTES": [b"a\x00b", b"", b"\x00\x00", b"plain", bytes(range(256)), b"\xff\xfe", "h\u00e9llo".encode(), b"x" * 1000],
}


def sample(dtype, shape):
    if dtype == "BYTES":
        return np.array(SAMPLES[dtype], dtype=np.object_).reshape(shape)
    if dtype == "BF16":
        return np.array(SAMPLES[dtype], dtype=ml_dtypes.bfloat16).reshape(shape)
    return np.array(SAMPLES[dtype], dtype=triton_to_np_dtype(dtype)).reshape(shape)


def bits(arr):
    """A bit-exact comparable form: raw bits for numbers (so -0.0 compares), bytes for BYTES."""
    arr = np.asarray(arr)
    if arr.dtype == np.object_:
        return [bytes(e) for e in arr.flatten()]
    if arr.dtype == np.bool_:
        return arr.astype(np.uint8).tolist()
    return arr.view(np.dtype(f"u{arr.dtype.itemsize}")).tolist()


def http_json(server, path):
    with urllib.request.urlopen(f"http://{server.http_url}{path}") as res:
        return json.loads(res.read())


@pytest.fixture(scope="module")
def client(server):
    c = grpcclient.InferenceServerClient(server.grpc_url)
    yield c
    c.close()


@pytest.fixture(scope="module")
def stub(server):
    channel = grpc.insecure_channel(server.grpc_url)
    yield service_pb2_grpc.GRPCInferenceServiceStub(channel)
    channel.close()


def infer_identity(client, dtype, arr, **kwargs):
    inp = grpcclient.InferInput("INPUT0", list(arr.shape), dtype)
    inp.set_data_from_numpy(arr)
    return client.infer(f"identity_{dtype.lower()}", [inp], **kwargs)


# ---- health, metadata, config --------------------------------------------------------------------

def test_live_ready_and_server_metadata(client, server):
    assert client.is_server_live()
    assert client.is_server_ready()
    assert client.is_model_ready("add_sub")
    meta = client.get_server_metadata(as_json=True)
    assert meta == http_json(server, "/v2")


@pytest.mark.parametrize("model", ["add_sub", "identity_bytes", "identity_bf16"])
def test_model_metadata_matches_http(client, server, model):
    meta = client.get_model_metadata(model, as_json=True)
    http = http_json(server, f"/v2/models/{model}")
    # MessageToJson prints int64 as strings.
    for tensors in ("inputs", "outputs"):
        for t in meta[tensors]:
            t["shape"] = [int(d) for d in t["shape"]]
    assert meta == http


@pytest.mark.parametrize("model", ["add_sub", "identity_fp32", "identity_bytes"])
def test_model_config_matches_http(client, server, model):
    http = http_json(server, f"/v2/models/{model}/config")
    # The HTTP JSON is the JSON form of inference.ModelConfig: parsed into the message, it must equal what gRPC sent.
    expected = json_format.ParseDict(http, model_config_pb2.ModelConfig())
    response = client.get_model_config(model)
    assert response.config == expected
    assert client.get_model_config(model, as_json=True) == {
        "config": json.loads(json_format.MessageToJson(expected, preserving_proto_field_name=True))
    }
    assert response.config.name == model
    assert response.config.max_batch_size == 64
    assert response.config.HasField("dynamic_batching")
    assert [i.data_type for i in response.config.input] == [model_config_pb2.DataType.Value(i["data_type"]) for i in http["input"]]


def test_model_statistics_match_http(client, server):
    infer_identity(client, "FP32", sample("FP32", (1, 8)))
    stats = client.get_inference_statistics("identity_fp32", as_json=True)["model_stats"][0]
    http = http_json(server, "/v2/models/identity_fp32/stats")["model_stats"][0]
    assert stats["name"] == "identity_fp32" and stats["version"] == "1"
    assert int(stats["inference_stats"]["success"]["count"]) >= 1
    assert int(stats["inference_count"]) <= http["inference_count"]


# ---- inference ------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", [(1, 8), (2, 4)])
def test_identity_round_trips_every_datatype(client, dtype, shape):
    arr = sample(dtype, shape)
    result = infer_identity(client, dtype, arr, request_id=f"id-{dtype}")
    out = result.as_numpy("OUTPUT0")
    assert out.shape == shape
    assert bits(out) == bits(arr)
    assert result.get_response().id == f"id-{dtype}"
    assert result.get_output("OUTPUT0").datatype == dtype


@pytest.mark.parametrize("batch", [1, 64])
def test_add_sub(client, batch):
    a = np.random.default_rng(batch).random((batch, 16), dtype=np.float32)
    b = np.random.default_rng(batch + 1).random((batch, 16), dtype=np.float32)
    inputs = [grpcclient.InferInput("a", [batch, 16], "FP32"), grpcclient.InferInput("b", [batch, 16], "FP32")]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(b)
    result = client.infer("add_sub", inputs, outputs=[grpcclient.InferRequestedOutput("sub"), grpcclient.InferRequestedOutput("add")])
    assert [o.name for o in result.get_response().outputs] == ["sub", "add"]
    np.testing.assert_array_equal(result.as_numpy("add"), a + b)
    np.testing.assert_array_equal(result.as_numpy("sub"), a - b)


def test_32_mib_input_round_trips(client):
    arr = np.arange(8 * 1024 * 1024, dtype=np.float32).reshape(1, -1)
    out = infer_identity(client, "FP32", arr).as_numpy("OUTPUT0")
    assert out.nbytes == 32 * 1024 * 1024
    np.testing.assert_array_equal(out, arr)


def test_gzip_request_compression(client):
    arr = np.zeros((1, 4096), dtype=np.float32)
    out = infer_identity(client, "FP32", arr, compression_algorithm="gzip").as_numpy("OUTPUT0")
    np.testing.assert_array_equal(out, arr)


def test_typed_contents_instead_of_raw(stub):
    request = service_pb2.ModelInferRequest(model_name="identity_int64", id="typed")
    inp = request.inputs.add(name="INPUT0", datatype="INT64", shape=[1, 2])
    inp.contents.int64_contents.extend([2**53 + 1, -7])
    response = stub.ModelInfer(request)
    assert response.id == "typed"
    assert len(response.raw_output_contents) == 1
    assert np.frombuffer(response.raw_output_contents[0], dtype="<i8").tolist() == [2**53 + 1, -7]


def test_custom_parameters_and_empty_final_response_flag_are_accepted(client):
    arr = sample("INT32", (1, 8))
    inp = grpcclient.InferInput("INPUT0", [1, 8], "INT32")
    inp.set_data_from_numpy(arr)
    result = client.infer("identity_int32", [inp], parameters={"note": "x", "n": 3, "f": 0.5, "b": True}, priority=0)
    assert bits(result.as_numpy("OUTPUT0")) == bits(arr)


# ---- errors: Triton's gRPC codes ------------------------------------------------------------------

def raises(fn):
    with pytest.raises(InferenceServerException) as info:
        fn()
    return info.value


def test_unknown_model_is_invalid_argument(client):
    arr = sample("FP32", (1, 8))
    inp = grpcclient.InferInput("INPUT0", [1, 8], "FP32")
    inp.set_data_from_numpy(arr)
    err = raises(lambda: client.infer("nope", [inp]))
    assert err.status() == "StatusCode.INVALID_ARGUMENT"
    assert err.message() == "Request for unknown model: 'nope' is not found"
    for call in (lambda: client.get_model_metadata("nope"), lambda: client.get_model_config("nope")):
        assert raises(call).status() == "StatusCode.INVALID_ARGUMENT"
    # ModelReady answers OK with ready false, as Triton's does.
    assert client.is_model_ready("nope") is False
    assert client.is_model_ready("add_sub", "7") is False


@pytest.mark.parametrize("name,make,message", [
    ("wrong datatype", lambda: (grpcclient.InferInput("INPUT0", [1, 2], "INT32"), np.zeros((1, 2), np.int32)),
     "data-type is 'INT32', but model 'identity_fp32' expects 'FP32'"),
    ("batch too large", lambda: (grpcclient.InferInput("INPUT0", [65, 1], "FP32"), np.zeros((65, 1), np.float32)),
     "batch-size must be <= 64"),
    ("wrong input name", lambda: (grpcclient.InferInput("NOPE", [1, 1], "FP32"), np.zeros((1, 1), np.float32)),
     "unexpected inference input 'NOPE'"),
])
def test_bad_requests_are_invalid_argument(client, name, make, message):
    inp, arr = make()
    inp.set_data_from_numpy(arr)
    err = raises(lambda: client.infer("identity_fp32", [inp]))
    assert err.status() == "StatusCode.INVALID_ARGUMENT", name
    assert message in err.message()


def test_reserved_parameter_is_invalid_argument_on_the_server(stub):
    request = service_pb2.ModelInferRequest(model_name="identity_fp32")
    request.inputs.add(name="INPUT0", datatype="FP32", shape=[1, 1])
    request.raw_input_contents.append(np.zeros(1, np.float32).tobytes())
    request.parameters["triton_custom"].bool_param = True
    with pytest.raises(grpc.RpcError) as info:
        stub.ModelInfer(request)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "reserved for Triton usage" in info.value.details()


def test_missing_raw_data_is_invalid_argument(stub):
    request = service_pb2.ModelInferRequest(model_name="identity_fp32")
    request.inputs.add(name="INPUT0", datatype="FP32", shape=[1, 1])
    with pytest.raises(grpc.RpcError) as info:
        stub.ModelInfer(request)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert info.value.details() == "unable to find data for input tensor 'INPUT0' for model 'identity_fp32' in request."




# ---- streaming ------------------------------------------------------------------------------------

def test_stream_answers_every_request_once(server):
    results = queue.Queue()
    c = grpcclient.InferenceServerClient(server.grpc_url)
    c.start_stream(callback=lambda result, error: results.put((result, error)))
    try:
        sent = {}
        for i in range(20):
            arr = np.full((1, 4), i, dtype=np.float32)
            inp = grpcclient.InferInput("INPUT0", [1, 4], "FP32")
            inp.set_data_from_numpy(arr)
            c.async_stream_infer("identity_fp32", [inp], request_id=str(i), enable_empty_final_response=i % 2 == 0)
            sent[str(i)] = arr
        bad = grpcclient.InferInput("INPUT0", [1, 4], "FP32")
        bad.set_data_from_numpy(np.zeros((1, 4), np.float32))
        c.async_stream_infer("nope", [bad], request_id="bad")
        c.async_stream_infer("identity_fp32", [inp], request_id="after-error")

        got, errors = {}, []
        for _ in range(len(sent) + 2):
            result, error = results.get(timeout=30)
            if error is not None:
                errors.append(error)
                continue
            response = result.get_response()
            assert response.parameters["triton_final_response"].bool_param is True
            assert response.id not in got
            got[response.id] = result.as_numpy("OUTPUT0")
        assert results.empty()
        assert len(errors) == 1 and "unknown model: 'nope'" in errors[0].message()
        assert sorted(got) == sorted([*sent, "after-error"])
        for rid, arr in sent.items():
            np.testing.assert_array_equal(got[rid], arr)
    finally:
        c.stop_stream()
        c.close()
