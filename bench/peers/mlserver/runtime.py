"""MLServer runtimes for the side-by-side (bench/peers): add_sub, identity and the ONNX MLP, as tstriton's and
PyTriton's servers serve them."""
from pathlib import Path

import numpy as np
import onnxruntime as ort
from mlserver import MLModel
from mlserver.codecs import NumpyCodec
from mlserver.types import InferenceRequest, InferenceResponse

MLP = Path(__file__).resolve().parents[3] / "test" / "fixtures" / "onnx" / "mlp_1024x4.onnx"


def _inputs(payload: InferenceRequest) -> dict:
    return {i.name: NumpyCodec.decode_input(i).astype(np.float32, copy=False) for i in payload.inputs}


def _response(model: MLModel, outputs: dict) -> InferenceResponse:
    return InferenceResponse(
        model_name=model.name,
        outputs=[NumpyCodec.encode_output(name=name, payload=value) for name, value in outputs.items()],
    )


class AddSub(MLModel):
    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        x = _inputs(payload)
        return _response(self, {"OUTPUT0": x["INPUT0"] + x["INPUT1"], "OUTPUT1": x["INPUT0"] - x["INPUT1"]})


class Identity(MLModel):
    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        return _response(self, {"OUTPUT0": _inputs(payload)["INPUT0"]})


class Mlp(MLModel):
    async def load(self) -> bool:
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(str(MLP), options, providers=["CPUExecutionProvider"])
        return True

    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        return _response(self, {"y": self._session.run(["y"], {"x": _inputs(payload)["x"]})[0]})
