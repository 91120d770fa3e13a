"""PyTriton's server for the side-by-side (bench/peers): add_sub, identity and the ONNX MLP, as tstriton's and
MLServer's servers in this folder serve them. Ports 8000 (HTTP) and 8001 (gRPC).

    /opt/peers-pytriton/bin/python bench/peers/serve_pytriton.py
"""
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
from pytriton.decorators import batch
from pytriton.model_config import DynamicBatcher, ModelConfig, Tensor
from pytriton.triton import Triton, TritonConfig, TritonSecurityConfig

MLP = Path(__file__).resolve().parents[2] / "test" / "fixtures" / "onnx" / "mlp_1024x4.onnx"


@batch
def add_sub(INPUT0, INPUT1):
    return {"OUTPUT0": INPUT0 + INPUT1, "OUTPUT1": INPUT0 - INPUT1}


@batch
def identity(INPUT0):
    return {"OUTPUT0": INPUT0}


def mlp_fn():
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(MLP), options, providers=["CPUExecutionProvider"])

    @batch
    def mlp(x):
        return {"y": session.run(["y"], {"x": x})[0]}

    return mlp


def main():
    config = TritonConfig(http_port=8000, grpc_port=8001, metrics_port=8002, allow_metrics=False)
    no_delay = DynamicBatcher(max_queue_delay_microseconds=0)
    # perf_analyzer reads the statistics endpoint, which PyTriton restricts by default; the other two servers leave it open.
    with Triton(config=config, security_config=TritonSecurityConfig(restricted_endpoints=[])) as triton:
        triton.bind(
            model_name="add_sub",
            infer_func=add_sub,
            inputs=[Tensor(name="INPUT0", dtype=np.float32, shape=(16,)), Tensor(name="INPUT1", dtype=np.float32, shape=(16,))],
            outputs=[Tensor(name="OUTPUT0", dtype=np.float32, shape=(16,)), Tensor(name="OUTPUT1", dtype=np.float32, shape=(16,))],
            config=ModelConfig(max_batch_size=64, batcher=no_delay),
        )
        triton.bind(
            model_name="identity",
            infer_func=identity,
            inputs=[Tensor(name="INPUT0", dtype=np.float32, shape=(-1,))],
            outputs=[Tensor(name="OUTPUT0", dtype=np.float32, shape=(-1,))],
            config=ModelConfig(max_batch_size=8, batcher=no_delay),
        )
        triton.bind(
            model_name="mlp",
            infer_func=mlp_fn(),
            inputs=[Tensor(name="x", dtype=np.float32, shape=(1024,))],
            outputs=[Tensor(name="y", dtype=np.float32, shape=(1024,))],
            config=ModelConfig(max_batch_size=64, batcher=no_delay),
        )
        print("pytriton serving", flush=True)
        triton.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
