"""Logging extension interop: `tritonclient` reads and changes the example server's log settings over HTTP and
gRPC (`get_log_settings`, `update_log_settings`); with verbose logging on, each inference request logs a line.
"""
import time

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException


def settings_of(protocol, client, update=None):
    if protocol == "http":
        return client.update_log_settings(update) if update is not None else client.get_log_settings()
    reply = client.update_log_settings(update, as_json=True) if update is not None else client.get_log_settings(as_json=True)
    return {k: next(iter(v.values())) for k, v in reply["settings"].items()}


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_read_and_change_log_settings(server, protocol):
    module = httpclient if protocol == "http" else grpcclient
    client = module.InferenceServerClient(server.http_url if protocol == "http" else server.grpc_url)
    before = settings_of(protocol, client)
    assert before["log_info"] is True and before["log_error"] is True
    assert int(before["log_verbose_level"]) == 0
    try:
        after = settings_of(protocol, client, {"log_info": False})
        assert after["log_info"] is False and after["log_warning"] is True
        assert settings_of(protocol, client)["log_info"] is False
        with pytest.raises(InferenceServerException, match="log file location can not be updated"):
            settings_of(protocol, client, {"log_file": "/tmp/elsewhere.log"})
        assert settings_of(protocol, client)["log_info"] is False  # a refused update changes nothing
    finally:
        settings_of(protocol, client, {"log_info": True, "log_verbose_level": 0})
    assert settings_of(protocol, client)["log_info"] is True


def test_verbose_logging_shows_in_the_log(server):
    client = httpclient.InferenceServerClient(server.http_url)
    mark = len(server.log)
    client.update_log_settings({"log_verbose_level": 1})
    try:
        deadline = time.monotonic() + 5
        a = httpclient.InferInput("a", [1, 4], "FP32")
        a.set_data_from_numpy(np.ones((1, 4), np.float32))
        b = httpclient.InferInput("b", [1, 4], "FP32")
        b.set_data_from_numpy(np.ones((1, 4), np.float32))
        client.infer("add_sub", [a, b], request_id="logged-request")
        while time.monotonic() < deadline and not any("logged-request" in line for line in server.log[mark:]):
            time.sleep(0.05)
        lines = [line for line in server.log[mark:] if "logged-request" in line]
        assert lines and '"level":20' in lines[0] and '"model":"add_sub"' in lines[0] and '"outcome":"ok"' in lines[0], "".join(server.log[mark:])
    finally:
        client.update_log_settings({"log_verbose_level": 0})
