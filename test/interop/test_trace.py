"""Trace extension interop: `tritonclient` (HTTP and gRPC) reads and changes trace settings on the example
server, for the server and for one model, and gets Triton's errors for what cannot be changed.
The session server has no trace file, so it cannot turn tracing on; a server of its own with
TSTRITON_TRACE_FILE writes traces that are checked too.
"""
import json
import os
import tempfile

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from conftest import start_server, stop_server


def settings(protocol, client, model=None, update=None):
    if protocol == "http":
        return client.update_trace_settings(model_name=model, settings=update) if update is not None else client.get_trace_settings(model_name=model)
    reply = (client.update_trace_settings(model_name=model, settings=update, as_json=True) if update is not None
             else client.get_trace_settings(model_name=model, as_json=True))
    return {k: (v["value"] if k == "trace_level" else v["value"][0]) for k, v in reply["settings"].items()}


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_read_and_change_trace_settings(server, protocol):
    module = httpclient if protocol == "http" else grpcclient
    client = module.InferenceServerClient(server.http_url if protocol == "http" else server.grpc_url)
    assert settings(protocol, client)["trace_level"] == ["OFF"]
    assert settings(protocol, client)["trace_mode"] == "triton"
    changed = settings(protocol, client, "add_sub", {"trace_rate": "7"})
    assert changed["trace_rate"] == "7"
    assert settings(protocol, client)["trace_rate"] == "1000"  # the server's own settings are unchanged
    cleared = settings(protocol, client, "add_sub", {"trace_rate": None})
    assert cleared["trace_rate"] == "1000"
    with pytest.raises(InferenceServerException, match="needs a trace file"):
        settings(protocol, client, None, {"trace_level": ["TIMESTAMPS"]})
    with pytest.raises(InferenceServerException, match="trace file location can not be updated"):
        settings(protocol, client, None, {"trace_file": "/tmp/elsewhere.json"})


def test_traces_written_to_the_trace_file():
    path = os.path.join(tempfile.mkdtemp(), "trace.json")
    running = start_server(env={"TSTRITON_TRACE_FILE": path})
    try:
        client = httpclient.InferenceServerClient(running.http_url)
        client.update_trace_settings(model_name="add_sub", settings={"trace_level": ["TIMESTAMPS"], "trace_rate": "1"})
        a = httpclient.InferInput("a", [1, 4], "FP32")
        a.set_data_from_numpy(np.ones((1, 4), np.float32))
        b = httpclient.InferInput("b", [1, 4], "FP32")
        b.set_data_from_numpy(np.ones((1, 4), np.float32))
        for i in range(3):
            client.infer("add_sub", [a, b], request_id=f"t{i}")
    finally:
        assert stop_server(running) == 0
    with open(path) as f:
        traces = json.load(f)
    assert [t["request_id"] for t in traces] == ["t0", "t1", "t2"]
    names = [s["name"] for s in traces[0]["timestamps"]]
    assert names[0] == "REQUEST_START" and names[-1] == "REQUEST_END" and "COMPUTE_START" in names
