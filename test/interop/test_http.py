"""HTTP interop: the real `tritonclient.http` (and raw HTTP where a client cannot misbehave on purpose)
against the real example server (`dist/examples/serve.js`).

Models served: `add_sub` (a, b FP32 [-1] -> add, sub) and `identity_<dtype>` (INPUT0 -> OUTPUT0) for every
KServe datatype, all with max_batch_size 64.
"""
import gzip
import http.client
import json
import threading
import zlib
from concurrent.futures import ThreadPoolExecutor

import ml_dtypes
import numpy as np
import pytest
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException, triton_to_np_dtype

from conftest import start_server, stop_server

ALL_DTYPES = ["BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64",
              "FP16", "FP32", "FP64", "BYTES", "BF16"]
BINARY_ONLY = {"FP16", "BF16"}
JSON_DTYPES = [d for d in ALL_DTYPES if d not in BINARY_ONLY]
CONFIG_TYPE = {d: "TYPE_STRING" if d == "BYTES" else f"TYPE_{d}" for d in ALL_DTYPES}

# Ten values per datatype (so both [1, 10] and [2, 5] fit), chosen at the edges of each type: min/max,
# integers beyond 2^53, -0.0, subnormals, embedded NULs.
SAMPLES = {
    "BOOL": [True, False, True, True, False, False, True, False, False, True],
    "UINT8": [0, 1, 2, 127, 128, 200, 254, 255, 17, 99],
    "UINT16": [0, 1, 255, 256, 32767, 32768, 65534, 65535, 1234, 4321],
    "UINT32": [0, 1, 2**16, 2**31 - 1, 2**31, 2**32 - 2, 2**32 - 1, 123456789, 7, 8],
    "UINT64": [0, 1, 2**32, 2**53, 2**53 + 1, 2**63, 2**64 - 2, 2**64 - 1, 2**62 + 1, 12345678901234567891],
    "INT8": [-128, -127, -1, 0, 1, 126, 127, 42, -42, 5],
    "INT16": [-32768, -32767, -1, 0, 1, 32766, 32767, 1000, -1000, 7],
    "INT32": [-2**31, -2**31 + 1, -1, 0, 1, 2**31 - 2, 2**31 - 1, 123456, -123456, 9],
    "INT64": [-(2**63), -(2**63) + 1, -(2**53) - 1, -1, 0, 1, 2**53 + 1, 2**62 + 1, 2**63 - 2, 2**63 - 1],
    "FP16": [0.0, -0.0, 1.0, -2.5, 0.1, 65504.0, -65504.0, 6e-8, 1e-4, 3.140625],
    "FP32": [0.0, -0.0, 1.0, -2.5, 0.1, 3.4028235e38, -1.17549435e-38, 1e-45, 123456.789, 1 / 3],
    "FP64": [0.0, -0.0, 1.0, -2.5, 0.1, 1.7976931348623157e308, -2.2250738585072014e-308, 5e-324, 1e100, 1 / 3],
    "BF16": [1.0, -2.5, 0.15625, 0.0, -0.0, 256.0, -1024.0, 0.0078125, 3.140625, 3.3895313892515355e38],
}
BYTES_BINARY = [b"a\x00b", b"", b"\x00\x00", b"plain", bytes(range(256)), b"\xff\xfe\xfd", "h\u00e9llo".encode(),
                b"\x00", b"x" * 1000, b"\n\r\t"]
BYTES_JSON = ["hello", "", "h\u00e9llo w\u00f6rld", "emoji \U0001F389", 'q"uote\\back/slash', "a\x00b",
              "tab\tnew\nline", "\u65e5\u672c\u8a9e", "x" * 1000, " "]
SHAPES = [(1, 10), (2, 5)]


def np_dtype(dtype):
    return triton_to_np_dtype(dtype)


def sample(dtype, shape, binary=True):
    if dtype == "BYTES":
        return np.array(BYTES_BINARY if binary else BYTES_JSON, dtype=np.object_).reshape(shape)
    return np.array(SAMPLES[dtype], dtype=np_dtype(dtype)).reshape(shape)


def wire(arr):
    """A comparable, bit-exact form of an array: raw bits for numbers (so -0.0 and NaN compare), bytes for BYTES."""
    arr = np.asarray(arr)
    if arr.dtype == np.object_:
        return [e if isinstance(e, bytes) else str(e).encode("utf-8") for e in arr.flatten()]
    if arr.dtype == np.bool_:
        return arr.astype(np.uint8).tolist()
    return arr.view(np.dtype(f"u{arr.dtype.itemsize}")).tolist()


def binary_size(arr):
    if arr.dtype == np.object_:
        return sum(4 + len(e) for e in wire(arr))
    return arr.nbytes


def identity_input(dtype, arr, binary):
    inp = httpclient.InferInput("INPUT0", list(arr.shape), dtype)
    inp.set_data_from_numpy(arr, binary_data=binary)
    return inp


@pytest.fixture(scope="module")
def client(server):
    c = httpclient.InferenceServerClient(server.http_url, network_timeout=120.0, connection_timeout=30.0)
    yield c
    c.close()


def raw_request(url, method, path, body=None, headers=None):
    """One HTTP request on a fresh connection; returns (status, headers with lower-case names, body bytes)."""
    host, port = url.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def add_sub_inputs(a, b, binary=True, dtype="FP32"):
    ia = httpclient.InferInput("a", list(a.shape), dtype)
    ia.set_data_from_numpy(a, binary_data=binary)
    ib = httpclient.InferInput("b", list(b.shape), dtype)
    ib.set_data_from_numpy(b, binary_data=binary)
    return [ia, ib]


def check_add_sub(result, a, b):
    np.testing.assert_array_equal(result.as_numpy("add"), a + b)
    np.testing.assert_array_equal(result.as_numpy("sub"), a - b)
    assert result.as_numpy("add").dtype == np.float32


# --- 1. health, server metadata, model readiness --------------------------------------------------------------


def test_server_live_and_ready(client):
    assert client.is_server_live() is True
    assert client.is_server_ready() is True


def test_server_metadata(client):
    md = client.get_server_metadata()
    assert isinstance(md["name"], str) and md["name"]
    assert isinstance(md["version"], str) and md["version"]
    assert isinstance(md["extensions"], list)
    assert "binary_tensor_data" in md["extensions"]
    assert all(isinstance(e, str) for e in md["extensions"])


@pytest.mark.parametrize("model,ready", [("add_sub", True), ("identity_fp32", True), ("identity_bytes", True),
                                         ("nope", False)])
def test_is_model_ready(client, model, ready):
    assert client.is_model_ready(model) is ready


def test_model_ready_by_version(client):
    assert client.is_model_ready("add_sub", "1") is True
    assert client.is_model_ready("add_sub", "2") is False


# --- 2. identity round trips, every datatype ------------------------------------------------------------------


def assert_identity_response(result, model, dtype, arr, binary):
    response = result.get_response()
    assert response["model_name"] == model
    assert response["model_version"] == "1"
    out = result.get_output("OUTPUT0")
    assert out["datatype"] == dtype
    assert out["shape"] == list(arr.shape)
    if binary:
        assert out["parameters"] == {"binary_data_size": binary_size(arr)}
        assert "data" not in out
    else:
        assert "data" in out and "parameters" not in out
    got = result.as_numpy("OUTPUT0")
    assert got.shape == arr.shape
    if dtype != "BYTES":
        assert got.dtype == arr.dtype
    assert wire(got) == wire(arr)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_identity_binary(client, dtype, shape):
    arr = sample(dtype, shape, binary=True)
    model = f"identity_{dtype.lower()}"
    result = client.infer(model, [identity_input(dtype, arr, True)],
                          outputs=[httpclient.InferRequestedOutput("OUTPUT0", binary_data=True)])
    assert_identity_response(result, model, dtype, arr, binary=True)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", JSON_DTYPES)
def test_identity_json(client, dtype, shape):
    arr = sample(dtype, shape, binary=False)
    model = f"identity_{dtype.lower()}"
    result = client.infer(model, [identity_input(dtype, arr, False)],
                          outputs=[httpclient.InferRequestedOutput("OUTPUT0", binary_data=False)])
    assert_identity_response(result, model, dtype, arr, binary=False)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_identity_default_outputs_are_binary(client, dtype):
    """No `outputs` in the request: tritonclient sets binary_data_output=true, so every output comes back binary."""
    arr = sample(dtype, (2, 5))
    model = f"identity_{dtype.lower()}"
    result = client.infer(model, [identity_input(dtype, arr, True)])
    assert_identity_response(result, model, dtype, arr, binary=True)


@pytest.mark.parametrize("dtype", ["FP16", "FP32", "FP64", "BF16"])
def test_float_specials_binary(client, dtype):
    """NaN, infinities and -0.0 have no (or a lossy) JSON form; in binary mode they come back bit for bit."""
    arr = np.array([[np.nan, np.inf, -np.inf, -0.0]], dtype=np_dtype(dtype))
    result = client.infer(f"identity_{dtype.lower()}", [identity_input(dtype, arr, True)],
                          outputs=[httpclient.InferRequestedOutput("OUTPUT0", binary_data=True)])
    assert wire(result.as_numpy("OUTPUT0")) == wire(arr)


def test_bf16_wire_format(server):
    """BF16 on the wire is the upper half of the FP32 bit pattern, little-endian (1.0 -> 0x3F80, -2.5 -> 0xC020)."""
    header = json.dumps({"inputs": [{"name": "INPUT0", "shape": [1, 3], "datatype": "BF16",
                                     "parameters": {"binary_data_size": 6}}],
                         "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}}]}).encode()
    payload = bytes([0x80, 0x3F, 0x20, 0xC0, 0x20, 0x3E])  # 1.0, -2.5, 0.15625
    status, headers, body = raw_request(server.http_url, "POST", "/v2/models/identity_bf16/infer", header + payload,
                                        {"Inference-Header-Content-Length": str(len(header))})
    assert status == 200, body
    ihcl = int(headers["inference-header-content-length"])
    assert body[ihcl:] == payload
    decoded = np.frombuffer(body[ihcl:], dtype=ml_dtypes.bfloat16).astype(np.float32)
    assert decoded.tolist() == [1.0, -2.5, 0.15625]


@pytest.mark.parametrize("dtype", ["INT16", "FP16", "BF16", "UINT32", "FP32", "INT64", "UINT64", "FP64"])
def test_binary_input_at_every_alignment(client, dtype):
    """The binary section starts right after the JSON header, at any byte offset; request ids of 1..8
    characters move it through every residue mod 8, so typed-array views must not assume alignment."""
    arr = sample(dtype, (1, 10))
    inp = identity_input(dtype, arr, True)
    outputs = [httpclient.InferRequestedOutput("OUTPUT0", binary_data=True)]
    residues = set()
    for n in range(1, 9):
        request_id = "r" * n
        _, json_size = httpclient.InferenceServerClient.generate_request_body([inp], outputs, request_id=request_id)
        residues.add(json_size % 8)
        result = client.infer(f"identity_{dtype.lower()}", [inp], outputs=outputs, request_id=request_id)
        assert wire(result.as_numpy("OUTPUT0")) == wire(arr), f"header of {json_size} bytes"
    assert residues == set(range(8))


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "json"])
@pytest.mark.parametrize("dtype", ["FP32", "INT64", "BYTES", "BOOL"])
def test_identity_empty_tensor(client, dtype, binary):
    """Zero-element tensors are legal: binary_data_size 0 (no bytes) or an empty `data` list."""
    arr = np.zeros((2, 0), dtype=np.object_ if dtype == "BYTES" else np_dtype(dtype))
    model = f"identity_{dtype.lower()}"
    result = client.infer(model, [identity_input(dtype, arr, binary)],
                          outputs=[httpclient.InferRequestedOutput("OUTPUT0", binary_data=binary)])
    out = result.get_output("OUTPUT0")
    assert out["shape"] == [2, 0]
    assert out.get("parameters", {}).get("binary_data_size", 0) == 0
    assert result.as_numpy("OUTPUT0").shape == (2, 0)


# --- 3. add_sub and concurrency -------------------------------------------------------------------------------


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "json"])
@pytest.mark.parametrize("batch", [1, 64])
def test_add_sub(client, batch, binary):
    rng = np.random.default_rng(batch)
    a = rng.uniform(-100, 100, (batch, 16)).astype(np.float32)
    b = rng.uniform(-100, 100, (batch, 16)).astype(np.float32)
    outputs = [httpclient.InferRequestedOutput("add", binary_data=binary),
               httpclient.InferRequestedOutput("sub", binary_data=binary)]
    result = client.infer("add_sub", add_sub_inputs(a, b, binary), outputs=outputs)
    check_add_sub(result, a, b)
    assert [o["shape"] for o in result.get_response()["outputs"]] == [[batch, 16], [batch, 16]]


def test_add_sub_only_requested_output(client):
    """When `outputs` is given, only those outputs are returned, each in its own requested form."""
    a = np.arange(16, dtype=np.float32).reshape(1, 16)
    b = np.ones((1, 16), dtype=np.float32)
    result = client.infer("add_sub", add_sub_inputs(a, b),
                          outputs=[httpclient.InferRequestedOutput("sub", binary_data=False)])
    assert [o["name"] for o in result.get_response()["outputs"]] == ["sub"]
    assert result.as_numpy("add") is None
    np.testing.assert_array_equal(result.as_numpy("sub"), a - b)


def test_add_sub_mixed_output_kinds(client):
    """One output JSON, one binary, in the same response."""
    a = np.linspace(-1, 1, 32, dtype=np.float32).reshape(2, 16)
    b = np.full((2, 16), 0.25, dtype=np.float32)
    result = client.infer("add_sub", add_sub_inputs(a, b),
                          outputs=[httpclient.InferRequestedOutput("add", binary_data=False),
                                   httpclient.InferRequestedOutput("sub", binary_data=True)])
    outs = {o["name"]: o for o in result.get_response()["outputs"]}
    assert "data" in outs["add"] and outs["sub"]["parameters"] == {"binary_data_size": 2 * 16 * 4}
    check_add_sub(result, a, b)


def test_concurrent_requests_are_batched_correctly(server):
    """32 requests from 8 threads, each thread with its own client; batch sizes 1..4 and two widths, so the
    dynamic batcher gets requests it may merge and requests it must keep apart. Every answer must be its own."""
    local = threading.local()
    clients = []
    lock = threading.Lock()

    def get_client():
        if not hasattr(local, "client"):
            local.client = httpclient.InferenceServerClient(server.http_url, network_timeout=60.0)
            with lock:
                clients.append(local.client)
        return local.client

    def one(i):
        rng = np.random.default_rng(1000 + i)
        shape = (1 + i % 4, 16 if i % 3 else 8)
        a = rng.uniform(-1e3, 1e3, shape).astype(np.float32)
        b = rng.uniform(-1e3, 1e3, shape).astype(np.float32)
        result = get_client().infer("add_sub", add_sub_inputs(a, b, binary=i % 5 != 0), request_id=f"req-{i}")
        return i, a, b, result

    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            results = list(pool.map(one, range(32)))
    finally:
        for c in clients:
            c.close()
    assert len(results) == 32
    for i, a, b, result in results:
        assert result.get_response()["id"] == f"req-{i}"
        check_add_sub(result, a, b)


# --- 4. metadata and config -----------------------------------------------------------------------------------


def test_add_sub_metadata(client):
    md = client.get_model_metadata("add_sub")
    assert md["name"] == "add_sub"
    assert md["versions"] == ["1"]
    assert isinstance(md["platform"], str)
    assert md["inputs"] == [{"name": "a", "datatype": "FP32", "shape": [-1, -1]},
                            {"name": "b", "datatype": "FP32", "shape": [-1, -1]}]
    assert md["outputs"] == [{"name": "add", "datatype": "FP32", "shape": [-1, -1]},
                             {"name": "sub", "datatype": "FP32", "shape": [-1, -1]}]


def test_add_sub_metadata_by_version(client):
    assert client.get_model_metadata("add_sub", "1")["versions"] == ["1"]


def test_add_sub_config(client):
    cfg = client.get_model_config("add_sub")
    assert cfg["name"] == "add_sub"
    assert cfg["max_batch_size"] == 64
    assert [(i["name"], i["data_type"], i["dims"]) for i in cfg["input"]] == [("a", "TYPE_FP32", [-1]),
                                                                            ("b", "TYPE_FP32", [-1])]
    assert [(o["name"], o["data_type"], o["dims"]) for o in cfg["output"]] == [("add", "TYPE_FP32", [-1]),
                                                                             ("sub", "TYPE_FP32", [-1])]
    assert isinstance(cfg["dynamic_batching"], dict)
    assert cfg["instance_group"] and all(g["kind"] == "KIND_CPU" for g in cfg["instance_group"])
    assert all(isinstance(g["count"], int) and g["count"] >= 1 for g in cfg["instance_group"])
    assert "sequence_batching" not in cfg


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_identity_metadata_and_config(client, dtype):
    model = f"identity_{dtype.lower()}"
    md = client.get_model_metadata(model)
    assert md["name"] == model
    assert md["inputs"] == [{"name": "INPUT0", "datatype": dtype, "shape": [-1, -1]}]
    assert md["outputs"] == [{"name": "OUTPUT0", "datatype": dtype, "shape": [-1, -1]}]
    cfg = client.get_model_config(model)
    assert cfg["max_batch_size"] == 64
    assert cfg["input"][0]["data_type"] == CONFIG_TYPE[dtype]
    assert cfg["output"][0]["data_type"] == CONFIG_TYPE[dtype]


# --- 5. compression -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "json"])
@pytest.mark.parametrize("algorithm", ["gzip", "deflate"])
def test_compression_both_ways(client, algorithm, binary):
    rng = np.random.default_rng(7)
    a = rng.uniform(-1, 1, (8, 16)).astype(np.float32)
    b = rng.uniform(-1, 1, (8, 16)).astype(np.float32)
    outputs = [httpclient.InferRequestedOutput("add", binary_data=binary),
               httpclient.InferRequestedOutput("sub", binary_data=binary)]
    result = client.infer("add_sub", add_sub_inputs(a, b, binary), outputs=outputs,
                          request_compression_algorithm=algorithm, response_compression_algorithm=algorithm)
    check_add_sub(result, a, b)


DECOMPRESS = {"gzip": gzip.decompress, "deflate": zlib.decompress}
COMPRESS = {"gzip": gzip.compress, "deflate": zlib.compress}


@pytest.mark.parametrize("algorithm", ["gzip", "deflate"])
def test_compression_on_the_wire(server, algorithm):
    """Raw check of what tritonclient relies on: a compressed request body is inflated before parsing, the
    response carries Content-Encoding, and Inference-Header-Content-Length counts the *uncompressed* JSON."""
    a = [float(i) for i in range(16)]
    request = {"inputs": [{"name": "a", "shape": [1, 16], "datatype": "FP32", "data": a},
                          {"name": "b", "shape": [1, 16], "datatype": "FP32", "data": [1.0] * 16}],
               "outputs": [{"name": "add", "parameters": {"binary_data": True}},
                           {"name": "sub", "parameters": {"binary_data": False}}]}
    status, headers, body = raw_request(server.http_url, "POST", "/v2/models/add_sub/infer",
                                        COMPRESS[algorithm](json.dumps(request).encode()),
                                        {"Content-Encoding": algorithm, "Accept-Encoding": algorithm})
    assert status == 200, body
    assert headers["content-encoding"] == algorithm
    plain = DECOMPRESS[algorithm](body)
    ihcl = int(headers["inference-header-content-length"])
    header = json.loads(plain[:ihcl])
    outs = {o["name"]: o for o in header["outputs"]}
    assert outs["add"]["parameters"]["binary_data_size"] == 64
    assert np.frombuffer(plain[ihcl:], dtype="<f4").tolist() == [x + 1 for x in a]
    assert outs["sub"]["data"] == [x - 1 for x in a]


@pytest.mark.parametrize("accept,expected", [
    ("gzip", "gzip"),
    ("deflate", "deflate"),
    ("gzip;q=0.5, deflate;q=0.9", "deflate"),
    ("deflate;q=0.1, gzip", "gzip"),
    ("identity", None),
    ("gzip;q=0.2, identity;q=0.8", None),
    ("br", None),
])
def test_response_encoding_negotiation(server, accept, expected):
    request = {"inputs": [{"name": "INPUT0", "shape": [1, 3], "datatype": "INT32", "data": [1, 2, 3]}]}
    status, headers, body = raw_request(server.http_url, "POST", "/v2/models/identity_int32/infer",
                                        json.dumps(request).encode(), {"Accept-Encoding": accept})
    assert status == 200
    assert headers.get("content-encoding") == expected
    plain = DECOMPRESS[expected](body) if expected else body
    assert json.loads(plain)["outputs"][0]["data"] == [1, 2, 3]


# --- 6. errors ------------------------------------------------------------------------------------------------


def _f32(shape, name="INPUT0", dtype="FP32", binary=True):
    np_type = np.int32 if dtype == "INT32" else (np.float16 if dtype == "FP16" else np.float32)
    inp = httpclient.InferInput(name, list(shape), dtype)
    inp.set_data_from_numpy(np.ones(shape, dtype=np_type), binary_data=binary)
    return inp


# (id, model, inputs factory, outputs factory, infer kwargs, status, message fragment)
CLIENT_ERRORS = [
    ("unknown-model", "nope", lambda: [_f32((1, 2))], None, {}, "400", "unknown model"),
    ("unknown-version", "add_sub", lambda: [_f32((1, 4), "a"), _f32((1, 4), "b")], None, {"model_version": "2"},
     "404", "Request for unknown model: 'add_sub' version 2 is not found"),
    ("wrong-dtype", "add_sub", lambda: [_f32((1, 4), "a", "INT32"), _f32((1, 4), "b")], None, {}, "400",
     "data-type"),
    ("wrong-shape", "identity_fp32", lambda: [_f32((1, 2, 3))], None, {}, "400", "shape"),
    ("batch-too-big", "add_sub", lambda: [_f32((65, 16), "a"), _f32((65, 16), "b")], None, {}, "400",
     "batch-size must be <= 64"),
    ("missing-input", "add_sub", lambda: [_f32((1, 4), "a")], None, {}, "400", "expected 2 inputs"),
    ("unknown-input", "identity_fp32", lambda: [_f32((1, 4)), _f32((1, 4), "EXTRA")], None, {}, "400", "EXTRA"),
    ("batch-mismatch", "add_sub", lambda: [_f32((1, 4), "a"), _f32((2, 4), "b")], None, {}, "400", "batch"),
    ("unknown-output", "add_sub", lambda: [_f32((1, 4), "a"), _f32((1, 4), "b")],
     lambda: [httpclient.InferRequestedOutput("nope")], {}, "400", "unexpected inference output"),
    ("fp16-json", "identity_fp16", lambda: [_f32((1, 2), dtype="FP16", binary=False)], None, {}, "400", "FP16"),
]


@pytest.mark.parametrize("model,make_inputs,make_outputs,kwargs,status,fragment",
                         [c[1:] for c in CLIENT_ERRORS], ids=[c[0] for c in CLIENT_ERRORS])
def test_client_error(client, model, make_inputs, make_outputs, kwargs, status, fragment):
    with pytest.raises(InferenceServerException) as info:
        client.infer(model, make_inputs(), outputs=make_outputs() if make_outputs else None, **kwargs)
    assert info.value.status() == status
    assert fragment.lower() in info.value.message().lower()


def _binary_request(size_declared, payload, with_header=True, header_length=None):
    header = json.dumps({"inputs": [{"name": "INPUT0", "shape": [1, 4], "datatype": "FP32",
                                     "parameters": {"binary_data_size": size_declared}}]}).encode()
    headers = {}
    if with_header:
        headers["Inference-Header-Content-Length"] = str(len(header) if header_length is None else header_length)
    return header + payload, headers


def _json_infer(inputs, **extra):
    return json.dumps({"inputs": inputs, **extra}).encode()


INFER = "/v2/models/identity_fp32/infer"
# (id, method, path, body, headers, status, exact error or fragment)
RAW_ERRORS = [
    ("malformed-json", "POST", INFER, b'{"inputs": [', {}, 400, "JSON"),
    ("json-not-object", "POST", INFER, b"[1, 2]", {}, 400, ""),
    ("missing-binary-data", "POST", INFER, *_binary_request(16, b"\x00" * 8), 400, "unexpected size for input"),
    ("extra-binary-data", "POST", INFER, *_binary_request(16, b"\x00" * 24), 400, "unexpected additional input"),
    # Without the header the whole body is JSON: a valid JSON body that declares binary data is refused (Triton's
    # message names the header 'Infer-Header-Content-Length'), and binary bytes after the JSON are a parse error.
    ("binary-without-header-length", "POST", INFER, *_binary_request(16, b"", with_header=False), 400,
     "Header-Content-Length"),
    ("binary-data-without-header-length", "POST", INFER, *_binary_request(16, b"\x00" * 16, with_header=False), 400,
     "JSON"),
    ("header-length-beyond-body", "POST", INFER, *_binary_request(16, b"\x00" * 16, header_length=10**6), 400,
     "inference header size"),
    ("header-length-not-a-number", "POST", INFER, *_binary_request(16, b"\x00" * 16, header_length="abc"), 400,
     "inference header size"),
    ("data-and-binary", "POST", INFER,
     _json_infer([{"name": "INPUT0", "shape": [1, 1], "datatype": "FP32", "data": [1.0],
                   "parameters": {"binary_data_size": 4}}]), {}, 400, "only one of"),
    ("data-count-mismatch", "POST", INFER,
     _json_infer([{"name": "INPUT0", "shape": [1, 3], "datatype": "FP32", "data": [1.0, 2.0]}]), {}, 400, "data"),
    ("int-given-float", "POST", "/v2/models/identity_int32/infer",
     _json_infer([{"name": "INPUT0", "shape": [1, 2], "datatype": "INT32", "data": [1.5, 2]}]), {}, 400, ""),
    ("negative-uint", "POST", "/v2/models/identity_uint8/infer",
     _json_infer([{"name": "INPUT0", "shape": [1, 1], "datatype": "UINT8", "data": [-1]}]), {}, 400, ""),
    ("uint8-overflow", "POST", "/v2/models/identity_uint8/infer",
     _json_infer([{"name": "INPUT0", "shape": [1, 1], "datatype": "UINT8", "data": [256]}]), {}, 400, ""),
    ("bool-given-int", "POST", "/v2/models/identity_bool/infer",
     _json_infer([{"name": "INPUT0", "shape": [1, 1], "datatype": "BOOL", "data": [1]}]), {}, 400, ""),
    ("bf16-json", "POST", "/v2/models/identity_bf16/infer",
     _json_infer([{"name": "INPUT0", "shape": [1, 1], "datatype": "BF16", "data": [1.0]}]), {}, 400, "BF16"),
    ("reserved-parameter", "POST", INFER,  # tritonclient refuses these itself, so only raw HTTP can send one
     _json_infer([{"name": "INPUT0", "shape": [1, 1], "datatype": "FP32", "data": [1.0]}],
                 parameters={"triton_x": 1}), {}, 400, "reserved"),
    ("negative-shape", "POST", INFER,
     _json_infer([{"name": "INPUT0", "shape": [1, -1], "datatype": "FP32", "data": [1.0]}]), {}, 400, "shape"),
    ("unknown-model", "POST", "/v2/models/nope/infer",
     _json_infer([{"name": "INPUT0", "shape": [1, 1], "datatype": "FP32", "data": [1.0]}]), {}, 400,
     "unknown model"),
    ("unknown-model-ready", "GET", "/v2/models/nope/ready", None, {}, 400, "unknown model"),
    ("unknown-model-metadata", "GET", "/v2/models/nope", None, {}, 400, "unknown model"),
    ("unknown-model-config", "GET", "/v2/models/nope/config", None, {}, 400, "unknown model"),
    ("unsupported-encoding", "POST", INFER, b"xx", {"Content-Encoding": "br"}, 501, "compression"),
    ("corrupt-gzip", "POST", INFER, b"not gzip at all", {"Content-Encoding": "gzip"}, 400, ""),
    ("unknown-endpoint", "GET", "/v2/nope", None, {}, 404, {"error": "Not Found"}),
    ("unknown-root", "GET", "/", None, {}, 404, {"error": "Not Found"}),
    ("non-numeric-version", "GET", "/v2/models/add_sub/versions/abc", None, {}, 404, {"error": "Not Found"}),
    ("unknown-action", "GET", "/v2/models/add_sub/explode", None, {}, 404, {"error": "Not Found"}),
    ("trailing-slash-model", "GET", "/v2/models/add_sub/", None, {}, 404, {"error": "Not Found"}),
    ("trailing-slash-health", "GET", "/v2/health/live/", None, {}, 404, {"error": "Not Found"}),
    ("trailing-slash-server", "GET", "/v2/", None, {}, 404, {"error": "Not Found"}),
    ("post-health", "POST", "/v2/health/live", b"", {}, 405, {"error": "Method Not Allowed"}),
    ("delete-server-metadata", "DELETE", "/v2", None, {}, 405, {"error": "Method Not Allowed"}),
    ("get-infer", "GET", "/v2/models/add_sub/infer", None, {}, 405, {"error": "Method Not Allowed"}),
    ("post-config", "POST", "/v2/models/add_sub/config", b"", {}, 405, {"error": "Method Not Allowed"}),
    ("put-metadata", "PUT", "/v2/models/add_sub", b"", {}, 405, {"error": "Method Not Allowed"}),
]


@pytest.mark.parametrize("method,path,body,headers,status,expected", [c[1:] for c in RAW_ERRORS],
                         ids=[c[0] for c in RAW_ERRORS])
def test_raw_error(server, method, path, body, headers, status, expected):
    got_status, got_headers, got_body = raw_request(server.http_url, method, path, body, headers)
    assert got_status == status, got_body
    assert got_headers["content-type"].startswith("application/json")
    error = json.loads(got_body)
    if isinstance(expected, dict):
        assert error == expected
    else:
        assert isinstance(error, dict) and isinstance(error.get("error"), str) and error["error"]
        assert expected.lower() in error["error"].lower()
    if status == 501:  # unsupported Content-Encoding: Triton advertises what it accepts
        assert "gzip" in got_headers["accept-encoding"] and "deflate" in got_headers["accept-encoding"]


@pytest.fixture(scope="module")
def small_server():
    """A second server whose HTTP body limit is 1 MiB."""
    running = start_server(env={"TSTRITON_HTTP_MAX_INPUT_SIZE": "1048576"})
    yield running
    stop_server(running)


def test_body_over_limit(small_server):
    c = httpclient.InferenceServerClient(small_server.http_url, network_timeout=60.0)
    try:
        big = np.zeros((1, 512 * 1024), dtype=np.float32)  # 2 MiB
        with pytest.raises(InferenceServerException) as info:
            c.infer("identity_fp32", [identity_input("FP32", big, True)])
        assert info.value.status() == "400"
        assert "exceeds the maximum allowed input size" in info.value.message()
        # Under the limit the same server answers, so the limit is the configured one and the server survived.
        # The same client is reused at once: had the server closed the connection without `Connection: close`,
        # the client would send this request on the dying keep-alive socket and get a reset.
        ok = np.arange(128 * 1024, dtype=np.float32).reshape(1, -1)  # 512 KiB
        result = c.infer("identity_fp32", [identity_input("FP32", ok, True)])
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), ok)
    finally:
        c.close()


@pytest.mark.parametrize("algorithm", ["gzip", "deflate"])
def test_decompressed_body_over_limit(small_server, algorithm):
    """The limit applies after decompression: 2 MiB of zeros compresses to a few KiB but must still be refused."""
    arr = np.zeros((1, 512 * 1024), dtype=np.float32)
    payload = arr.tobytes()
    header = json.dumps({"inputs": [{"name": "INPUT0", "shape": [1, 512 * 1024], "datatype": "FP32",
                                     "parameters": {"binary_data_size": len(payload)}}]}).encode()
    body = COMPRESS[algorithm](header + payload)
    assert len(body) < 1048576
    host, port = small_server.http_url.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request("POST", "/v2/models/identity_fp32/infer", body=body,
                     headers={"Content-Encoding": algorithm, "Inference-Header-Content-Length": str(len(header))})
        resp = conn.getresponse()
        assert resp.status == 400
        assert "maximum allowed input size" in json.loads(resp.read())["error"]
        # HTTP/1.1 keep-alive contract: either the server announces it closes the connection, or the
        # connection still works for the next request.
        if (resp.getheader("Connection") or "").lower() != "close":
            conn.request("GET", "/v2/health/live")
            assert conn.getresponse().status == 200
    finally:
        conn.close()
    assert raw_request(small_server.http_url, "GET", "/v2/health/live")[0] == 200


def test_server_still_serves_after_errors(client):
    """Runs after the error tests (file order): none of them broke the server."""
    assert client.is_server_live() and client.is_server_ready()
    a = np.full((2, 16), 3.0, dtype=np.float32)
    b = np.full((2, 16), 1.0, dtype=np.float32)
    check_add_sub(client.infer("add_sub", add_sub_inputs(a, b)), a, b)


# --- 7. request id --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("request_id", ["42", "abc-def", "h\u00e9llo \u2713", 'with "quotes" and \\', "x" * 300])
@pytest.mark.parametrize("binary", [True, False], ids=["binary", "json"])
def test_request_id_echoed(client, request_id, binary):
    arr = np.array([[1, 2, 3]], dtype=np.int32)
    result = client.infer("identity_int32", [identity_input("INT32", arr, binary)], request_id=request_id,
                          outputs=[httpclient.InferRequestedOutput("OUTPUT0", binary_data=binary)])
    assert result.get_response()["id"] == request_id
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), arr)


def test_no_request_id_no_id_field(client):
    arr = np.array([[1, 2, 3]], dtype=np.int32)
    result = client.infer("identity_int32", [identity_input("INT32", arr, True)])
    assert "id" not in result.get_response()


# --- 8. large tensor ------------------------------------------------------------------------------------------


def test_32_mib_fp32_round_trip(client):
    n = 32 * 1024 * 1024 // 4
    arr = np.random.default_rng(32).standard_normal((1, n), dtype=np.float32)
    assert arr.nbytes == 32 * 1024 * 1024
    result = client.infer("identity_fp32", [identity_input("FP32", arr, True)],
                          outputs=[httpclient.InferRequestedOutput("OUTPUT0", binary_data=True)])
    out = result.as_numpy("OUTPUT0")
    assert out.shape == arr.shape
    assert np.array_equal(out, arr)
