"""The served OCR pipeline (`ocr` → `ocr_det`, `ocr_rec`) read through Triton's own Python clients."""
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ocr"


def image_input(module, name):
    data = (FIXTURES / name).read_bytes()
    tensor = module.InferInput("IMAGE", [1], "BYTES")
    tensor.set_data_from_numpy(np.array([data], dtype=np.object_))
    return tensor


def client_for(protocol, server):
    if protocol == "http":
        return httpclient, httpclient.InferenceServerClient(server.http_url)
    return grpcclient, grpcclient.InferenceServerClient(server.grpc_url)


def executions(client, model):
    stats = client.get_inference_statistics(model)
    if not isinstance(stats, dict):  # gRPC returns a protobuf message
        return stats.model_stats[0].execution_count
    return stats["model_stats"][0]["execution_count"]


@pytest.mark.parametrize("protocol", ["http", "grpc"])
@pytest.mark.parametrize("fixture,expected", [
    ("hello-world.png", ["HELLO WORLD 2026"]),
    ("two-lines.jpg", ["Triton serves OCR", "second line 42"]),
])
def test_reads_printed_text(server, protocol, fixture, expected):
    module, client = client_for(protocol, server)
    result = client.infer("ocr", [image_input(module, fixture)])
    texts = [t.decode() for t in result.as_numpy("TEXTS")]
    assert texts == expected
    boxes = result.as_numpy("BOXES")
    assert boxes.shape == (len(expected), 4)
    assert (boxes[:, 2] > boxes[:, 0]).all() and (boxes[:, 3] > boxes[:, 1]).all()
    # reading order: top to bottom
    assert list(boxes[:, 1]) == sorted(boxes[:, 1])


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_blank_image_returns_nothing_and_skips_recognition(server, protocol):
    module, client = client_for(protocol, server)
    before_det = executions(client, "ocr_det")
    before_rec = executions(client, "ocr_rec")
    result = client.infer("ocr", [image_input(module, "blank.png")])
    assert result.as_numpy("TEXTS").shape == (0,)
    assert result.as_numpy("BOXES").shape == (0, 4)
    assert executions(client, "ocr_det") == before_det + 1
    assert executions(client, "ocr_rec") == before_rec


def test_concurrent_requests_batch_inside_the_models(server):
    def read(_):
        client = httpclient.InferenceServerClient(server.http_url)
        return [t.decode() for t in client.infer("ocr", [image_input(httpclient, "hello-world.png")]).as_numpy("TEXTS")]

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(read, range(16)))
    assert all(r == ["HELLO WORLD 2026"] for r in results)
    client = httpclient.InferenceServerClient(server.http_url)
    for model in ("ocr_det", "ocr_rec"):
        sizes = [b["batch_size"] for b in client.get_inference_statistics(model)["model_stats"][0]["batch_stats"]]
        assert max(sizes) > 1, f"{model} never batched: {sizes}"


def test_not_an_image_is_a_clear_client_error(server):
    client = httpclient.InferenceServerClient(server.http_url)
    bad = httpclient.InferInput("IMAGE", [1], "BYTES")
    bad.set_data_from_numpy(np.array([b"GIF89a not supported"], dtype=np.object_))
    with pytest.raises(httpclient.InferenceServerException) as err:
        client.infer("ocr", [bad])
    assert err.value.status() == "400"
    assert "PNG" in err.value.message() or "JPEG" in err.value.message()


def test_pipeline_config_and_derived_onnx_configs(server):
    client = httpclient.InferenceServerClient(server.http_url)
    ocr = client.get_model_config("ocr")
    assert ocr["max_batch_size"] == 0
    assert [(i["name"], i["data_type"], i["dims"]) for i in ocr["input"]] == [("IMAGE", "TYPE_STRING", [1])]
    assert [(o["name"], o["data_type"], o["dims"]) for o in ocr["output"]] == [("TEXTS", "TYPE_STRING", [-1]), ("BOXES", "TYPE_FP32", [-1, 4])]
    det = client.get_model_config("ocr_det")
    assert det["platform"] == "onnxruntime_onnx"
    assert det["input"][0]["dims"] == [3, -1, -1]
    rec = client.get_model_config("ocr_rec")
    assert rec["input"][0]["dims"] == [3, 48, -1]
    assert rec["output"][0]["dims"] == [-1, 6625]
