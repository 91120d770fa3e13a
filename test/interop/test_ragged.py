"""Ragged batching with tritonclient against the example server's `ragged_sum` (INPUT FP32 [-1] with
allow_ragged_batch, batch input INDEX = BATCH_ACCUMULATED_ELEMENT_COUNT, output SUM [1]): concurrent requests
of lengths 1..100 each get their own sum, and the statistics show fewer executions than requests.
"""
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

MODEL = "ragged_sum"


def vector(n):
    return (np.arange(n, dtype=np.float32) % 7) - 2.5


def test_http_concurrent_ragged_requests_batch_and_get_their_own_sums(server):
    stats = httpclient.InferenceServerClient(server.http_url)
    before = stats.get_inference_statistics(MODEL)["model_stats"][0]

    def one(n):
        client = httpclient.InferenceServerClient(server.http_url)
        inp = httpclient.InferInput("INPUT", [1, n], "FP32")
        inp.set_data_from_numpy(vector(n).reshape(1, n))
        try:
            return client.infer(MODEL, [inp]).as_numpy("SUM")
        finally:
            client.close()

    with ThreadPoolExecutor(max_workers=32) as pool:
        sums = list(pool.map(one, range(1, 101)))
    for n, got in zip(range(1, 101), sums):
        assert got.shape == (1, 1)
        assert got[0][0] == np.float32(vector(n).sum()), n
    after = stats.get_inference_statistics(MODEL)["model_stats"][0]
    requests = int(after["inference_count"]) - int(before["inference_count"])
    executions = int(after["execution_count"]) - int(before["execution_count"])
    assert requests == 100
    assert executions < requests


def test_grpc_stream_ragged_requests(server):
    client = grpcclient.InferenceServerClient(server.grpc_url)
    results = {}
    done = []
    client.start_stream(callback=lambda result, error: done.append((result, error)))
    try:
        for n in range(1, 101):
            inp = grpcclient.InferInput("INPUT", [1, n], "FP32")
            inp.set_data_from_numpy(vector(n).reshape(1, n))
            client.async_stream_infer(MODEL, [inp], request_id=str(n))
    finally:
        client.stop_stream()
    for result, error in done:
        assert error is None, error
        results[int(result.get_response().id)] = result.as_numpy("SUM")[0][0]
    assert sorted(results) == list(range(1, 101))
    for n, got in results.items():
        assert got == np.float32(vector(n).sum()), n
    config = client.get_model_config(MODEL).config
    assert config.input[0].allow_ragged_batch
    assert config.batch_input[0].kind == 1  # BATCH_ACCUMULATED_ELEMENT_COUNT
    assert list(config.batch_input[0].target_name) == ["INDEX"]
    client.close()


def test_golden_ragged_config_parses_with_tritons_protobuf():
    from pathlib import Path

    from google.protobuf import json_format, text_format
    from tritonclient.grpc import model_config_pb2

    golden = Path(__file__).resolve().parents[1] / "unit" / "config" / "golden"
    from_text = text_format.Parse((golden / "ragged.pbtxt").read_text(), model_config_pb2.ModelConfig())
    from_json = json_format.Parse((golden / "ragged.json").read_text(), model_config_pb2.ModelConfig())
    assert from_text == from_json
    assert from_text.input[0].allow_ragged_batch
    assert [b.kind for b in from_text.batch_input] == [model_config_pb2.BatchInput.BATCH_ELEMENT_COUNT,
                                                       model_config_pb2.BatchInput.BATCH_ITEM_SHAPE_FLATTEN]
    assert from_text.batch_input[1].data_type == model_config_pb2.TYPE_INT64
    assert from_text.batch_output[0].kind == model_config_pb2.BatchOutput.BATCH_SCATTER_WITH_INPUT_SHAPE
    assert list(from_text.batch_output[0].target_name) == ["OUTPUT"]


def test_live_ragged_config_is_a_valid_model_config(server):
    from google.protobuf import json_format
    from tritonclient.grpc import model_config_pb2

    config = httpclient.InferenceServerClient(server.http_url).get_model_config(MODEL)
    parsed = json_format.ParseDict(config, model_config_pb2.ModelConfig())
    assert parsed.input[0].allow_ragged_batch
    assert parsed.batch_input[0].source_input == ["INPUT"]
