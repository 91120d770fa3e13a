"""The generated config.pbtxt and config JSON parse with Triton's own ModelConfig protobuf and agree."""
from pathlib import Path

import pytest
from google.protobuf import json_format, text_format
from tritonclient.grpc import model_config_pb2

GOLDEN = Path(__file__).resolve().parents[1] / "unit" / "config" / "golden"


@pytest.mark.parametrize("name", ["batching", "no-batching"])
def test_pbtxt_and_json_describe_the_same_model_config(name):
    from_text = text_format.Parse((GOLDEN / f"{name}.pbtxt").read_text(), model_config_pb2.ModelConfig())
    # ignore_unknown_fields=False: every JSON key must be a real ModelConfig field.
    from_json = json_format.Parse((GOLDEN / f"{name}.json").read_text(), model_config_pb2.ModelConfig())
    assert from_text == from_json
    assert from_text.name == "add_sub"
    assert from_text.input[1].data_type == model_config_pb2.TYPE_STRING


def test_live_config_json_is_a_valid_model_config(server):
    import tritonclient.http as httpclient

    client = httpclient.InferenceServerClient(server.http_url)
    config = client.get_model_config("add_sub")
    parsed = json_format.ParseDict(config, model_config_pb2.ModelConfig())
    assert parsed.max_batch_size == 64
    assert parsed.HasField("dynamic_batching")
    assert [i.name for i in parsed.input] == ["a", "b"]
