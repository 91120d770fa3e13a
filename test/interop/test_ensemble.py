"""The color_ensemble example (preprocess → ONNX classifier → postprocess) through tritonclient."""
import io

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from PIL import Image


def png(color):
    buffer = io.BytesIO()
    Image.new("RGB", (64, 48), color).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.mark.parametrize("module,url_attr", [(httpclient, "http_url"), (grpcclient, "grpc_url")])
def test_ensemble_classifies_solid_colors(server, module, url_attr):
    client = module.InferenceServerClient(getattr(server, url_attr))
    images = [png(c) for c in ((200, 20, 20), (10, 180, 30), (0, 0, 250))]
    tensor = module.InferInput("IMAGE", [3, 1], "BYTES")
    tensor.set_data_from_numpy(np.array(images, dtype=np.object_).reshape(3, 1))
    result = client.infer("color_ensemble", [tensor])
    assert [label.decode() for label in result.as_numpy("LABEL").reshape(-1)] == ["red", "green", "blue"]
    scores = result.as_numpy("SCORE").reshape(-1)
    assert (scores > 0.5).all() and (scores <= 1).all()


def test_ensemble_config_lists_the_steps(server):
    client = httpclient.InferenceServerClient(server.http_url)
    config = client.get_model_config("color_ensemble")
    assert config["platform"] == "ensemble"
    assert [s["model_name"] for s in config["ensemble_scheduling"]["step"]] == ["color_preprocess", "color_classifier", "color_postprocess"]
    assert client.get_model_metadata("color_ensemble")["platform"] == "ensemble"
