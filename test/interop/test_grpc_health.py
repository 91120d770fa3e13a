"""Standard gRPC health checking (`grpc.health.v1.Health/Check`, via grpcio-health-checking) against a
tstriton server: SERVING while ready, NOT_SERVING from the moment it starts stopping while a request is
still in flight, and the in-flight request failing with UNAVAILABLE when the exit timeout cuts it.
"""
import threading
import time
from pathlib import Path

import grpc
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from grpc_health.v1 import health_pb2, health_pb2_grpc

from conftest import ROOT, start_server, stop_server

# A server with one model whose callable announces each request, then holds it until it is aborted.
HANG_SERVER = """
const { Triton } = require(%r);
const triton = new Triton();
triton.bind({
  modelName: 'hang',
  inferFunc: async (requests) => {
    console.log(JSON.stringify({ msg: 'request started', id: requests[0].id }));
    await new Promise((resolve) => requests[0].signal.addEventListener('abort', resolve));
    return requests.map((r) => ({ OUTPUT0: r.inputs.INPUT0 }));
  },
  inputs: [{ name: 'INPUT0', dtype: 'FP32', shape: [-1] }],
  outputs: [{ name: 'OUTPUT0', dtype: 'FP32', shape: [-1] }],
});
triton.serve().then((code) => process.exit(code));
"""


def check(channel):
    return health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=""), timeout=10).status


def test_example_server_is_serving(server):
    with grpc.insecure_channel(server.grpc_url) as channel:
        assert check(channel) == health_pb2.HealthCheckResponse.SERVING
        # Triton ignores the service name.
        status = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service="inference"), timeout=10).status
        assert status == health_pb2.HealthCheckResponse.SERVING


def test_not_serving_while_stopping(tmp_path):
    script = tmp_path / "hang_server.js"
    script.write_text(HANG_SERVER % str(ROOT / "dist" / "lib" / "index.js"))
    running = start_server(str(script), env={"TSTRITON_EXIT_TIMEOUT_SECONDS": "3", "TSTRITON_ALLOW_METRICS": "false"})
    try:
        client = grpcclient.InferenceServerClient(running.grpc_url)
        channel = grpc.insecure_channel(running.grpc_url)
        assert check(channel) == health_pb2.HealthCheckResponse.SERVING

        inp = grpcclient.InferInput("INPUT0", [1, 1], "FP32")
        inp.set_data_from_numpy(np.zeros((1, 1), np.float32))
        outcome = {}
        done = threading.Event()

        def callback(result, error):
            outcome["result"], outcome["error"] = result, error
            done.set()

        client.async_infer("hang", [inp], callback, request_id="held")
        wait_for_log(running, '"request started"')

        running.proc.terminate()
        wait_for_log(running, '"stopping on signal"')
        # The server is draining the held request: still up, no longer serving.
        assert check(channel) == health_pb2.HealthCheckResponse.NOT_SERVING
        assert not client.is_server_ready()
        refused = pytest.raises(Exception, client.infer, "hang", [inp])
        assert "StatusCode.UNAVAILABLE" in str(refused.value)

        assert done.wait(30), "the held request never finished"
        assert outcome["error"] is not None
        assert outcome["error"].status() == "StatusCode.UNAVAILABLE"
        assert running.proc.wait(30) == 0
        channel.close()
        client.close()
    finally:
        stop_server(running)


def wait_for_log(running, text, timeout=30):
    """Waits for a line of the server's output; the log is filled by conftest's reader thread."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(text in line for line in running.log):
            return
        time.sleep(0.02)
    raise AssertionError(f"server never logged {text}:\n" + "".join(running.log))
