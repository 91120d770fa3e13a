"""Large gRPC responses arrive whole while the server's garbage collector runs all the time.

node:http2 sends a response's bytes after its write has finished; a buffer that nothing else held (a response
tensor on a front-end thread) could be collected before it was sent, and the call then hung with part of its
bytes sent (lib/server/grpc/on-the-wire.ts). The servers here collect every few milliseconds on every thread
(helpers/collect-often.js), so that what took a loaded machine hundreds of calls to show happens on the first.
"""
import numpy as np
import pytest
import tritonclient.grpc as grpcclient

from conftest import ROOT, start_server, stop_server

pytestmark = pytest.mark.runs_once(reason="sets its own thread counts, one and two front-end threads")


@pytest.fixture(params=[1, 2], ids=["one-thread", "two-front-end-threads"])
def collecting_server(request):
    server = start_server(env={"TSTRITON_HTTP_THREAD_COUNT": str(request.param)},
                          command=["node", "--require", str(ROOT / "test/interop/helpers/collect-often.js"),
                                   "dist/examples/serve.js"], timeout=120)
    yield server
    stop_server(server)


def test_32_mib_responses_arrive_whole_under_constant_collection(collecting_server):
    client = grpcclient.InferenceServerClient(collecting_server.grpc_url)
    try:
        for i in range(4):
            arr = (np.arange(8 * 1024 * 1024, dtype=np.float32) + i).reshape(1, -1)
            inp = grpcclient.InferInput("INPUT0", list(arr.shape), "FP32")
            inp.set_data_from_numpy(arr)
            # A call that hangs fails here, after its deadline, rather than holding the suite.
            out = client.infer("identity_fp32", [inp], client_timeout=120).as_numpy("OUTPUT0")
            np.testing.assert_array_equal(out, arr)
    finally:
        client.close()
