"""A sequence's life ends, with tritonclient: idle past max_sequence_idle_microseconds it is freed and its next
request gets Triton's START error; a worker that crashes fails the sequences in its slots with a clear error,
and new sequences run on the restarted worker. Server: test/interop/servers/sequence-lifecycle.js.
"""
import time

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from conftest import start_server, stop_server


@pytest.fixture(scope="module")
def lifecycle():
    server = start_server("test/interop/servers/sequence-lifecycle.js")
    yield server
    stop_server(server)


def value(module, v):
    inp = module.InferInput("INPUT", [1, 1], "INT32")
    inp.set_data_from_numpy(np.array([[v]], dtype=np.int32))
    return [inp]


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_an_idle_sequence_is_freed_and_its_next_request_must_start(lifecycle, protocol):
    module = httpclient if protocol == "http" else grpcclient
    client = module.InferenceServerClient(lifecycle.http_url if protocol == "http" else lifecycle.grpc_url)
    sid = f"idle-{protocol}"
    assert int(client.infer("seq_idle", value(module, 4), sequence_id=sid, sequence_start=True).as_numpy("OUTPUT")[0][0]) == 4
    assert int(client.infer("seq_idle", value(module, 5), sequence_id=sid).as_numpy("OUTPUT")[0][0]) == 9
    # Silent for five times the 200 ms idle timeout: the sequence is freed (the assertion is on the answer).
    time.sleep(1.0)
    with pytest.raises(InferenceServerException) as caught:
        client.infer("seq_idle", value(module, 1), sequence_id=sid)
    assert caught.value.message() == (
        f"inference request for sequence {sid} to model 'seq_idle' must specify the START flag on the first request of the sequence")
    # Started again, it begins from a fresh state.
    assert int(client.infer("seq_idle", value(module, 2), sequence_id=sid, sequence_start=True, sequence_end=True).as_numpy("OUTPUT")[0][0]) == 2


def test_a_worker_crash_fails_its_sequences_and_new_ones_run_after_the_restart(lifecycle):
    client = httpclient.InferenceServerClient(lifecycle.http_url)
    assert int(client.infer("seq_worker", value(httpclient, 3), sequence_id=1, sequence_start=True).as_numpy("OUTPUT")[0][0]) == 3
    assert int(client.infer("seq_worker", value(httpclient, 4), sequence_id="two", sequence_start=True).as_numpy("OUTPUT")[0][0]) == 4
    with pytest.raises(InferenceServerException):
        client.infer("seq_worker", value(httpclient, 1), sequence_id=1, parameters={"action": "exit"})
    with pytest.raises(InferenceServerException) as caught:
        client.infer("seq_worker", value(httpclient, 1), sequence_id="two")
    assert caught.value.status() == "503"
    assert caught.value.message().startswith("sequence two of model 'seq_worker' was lost: instance seq_worker_0 failed")
    assert caught.value.message().endswith("; start the sequence again")
    sums = [int(client.infer("seq_worker", value(httpclient, v), sequence_id="two", sequence_start=i == 0, sequence_end=i == 2)
                .as_numpy("OUTPUT")[0][0]) for i, v in enumerate([5, 6, 7])]
    assert sums == [5, 11, 18]
