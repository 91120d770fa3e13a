"""The sequence batcher with Triton's own clients against the example server's `sequence_accumulate` (the
running sum of INPUT within a sequence, kept in implicit state; oldest strategy, 8 candidate sequences).

16 sequences of random lengths run interleaved over HTTP (`sequence_id=`, `sequence_start=`, `sequence_end=`
on `infer`) and over one gRPC stream (`async_stream_infer`), with integer and string correlation ids; every
answer must be its own sequence's running sum. The error cases get Triton's status and message, and the
statistics show executions that held more than one sequence.
"""
import os
import queue
import random
import re
import signal
import threading
import time
import urllib.request

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

MODEL = "sequence_accumulate"


def make_input(module, value):
    inp = module.InferInput("INPUT", [1, 1], "INT32")
    inp.set_data_from_numpy(np.array([[value]], dtype=np.int32))
    return [inp]


def plan(seed, count=16):
    """`count` sequences of 1..50 values each, half with integer ids and half with string ids."""
    rng = random.Random(seed)
    sequences = []
    for s in range(count):
        sid = seed * 1000 + s + 1 if s % 2 == 0 else f"seq-{seed}-{s}"
        values = [rng.randint(-100, 100) for _ in range(rng.randint(1, 50))]
        sequences.append((sid, values))
    return sequences


def running_sums(values):
    return list(np.cumsum(values, dtype=np.int64))


def stats_of(client):
    return client.get_inference_statistics(MODEL)["model_stats"][0]


def test_http_interleaved_sequences_get_their_running_sums(server):
    sequences = plan(1)
    before = stats_of(httpclient.InferenceServerClient(server.http_url))
    results = {}
    errors = []

    def run(sid, values):
        client = httpclient.InferenceServerClient(server.http_url)
        try:
            sums = []
            for i, v in enumerate(values):
                result = client.infer(MODEL, make_input(httpclient, v), sequence_id=sid,
                                      sequence_start=i == 0, sequence_end=i == len(values) - 1)
                sums.append(int(result.as_numpy("OUTPUT")[0][0]))
            results[sid] = sums
        except Exception as err:  # noqa: BLE001 - reported below
            errors.append(err)
        finally:
            client.close()

    threads = [threading.Thread(target=run, args=s) for s in sequences]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    for sid, values in sequences:
        assert results[sid] == running_sums(values), sid
    after = stats_of(httpclient.InferenceServerClient(server.http_url))
    requests = sum(len(v) for _, v in sequences)
    # The metrics count the sequence batcher's executions as the statistics do.
    metrics = urllib.request.urlopen(f"http://{server.metrics_url}/metrics").read().decode()
    executions = re.search(r'^nv_inference_exec_count\{model="sequence_accumulate",version="1"\} (\d+)', metrics, re.MULTILINE)
    assert executions and int(executions.group(1)) == int(after["execution_count"]), metrics
    assert int(after["inference_count"]) - int(before["inference_count"]) == requests
    assert int(after["execution_count"]) - int(before["execution_count"]) < requests
    assert any(int(b["batch_size"]) > 1 for b in after["batch_stats"])


def test_grpc_stream_interleaved_sequences_get_their_running_sums(server):
    sequences = plan(2)
    client = grpcclient.InferenceServerClient(server.grpc_url)
    before = stats_of_grpc(client)
    answers = queue.Queue()
    client.start_stream(callback=lambda result, error: answers.put((result, error)))
    sent = 0
    try:
        # The server is held stopped while the requests are sent, so that they wait in its socket and it reads them
        # together when it resumes: the statistics below can then show executions that held several sequences
        # however slowly a busy machine lets this client send (sent to a running server, each request may be done
        # before the next one arrives).
        os.killpg(server.proc.pid, signal.SIGSTOP)
        try:
            # Round-robin: request i of every sequence before request i + 1 of any, all without waiting.
            longest = max(len(v) for _, v in sequences)
            for i in range(longest):
                for sid, values in sequences:
                    if i < len(values):
                        client.async_stream_infer(MODEL, make_input(grpcclient, values[i]), request_id=f"{sid}/{i}",
                                                  sequence_id=sid, sequence_start=i == 0, sequence_end=i == len(values) - 1)
                        sent += 1
            time.sleep(2)  # time for the client's stream thread to write them out
        finally:
            os.killpg(server.proc.pid, signal.SIGCONT)
        got = {}
        for _ in range(sent):
            result, error = answers.get(timeout=60)
            assert error is None, error
            rid = result.get_response().id
            got[rid] = int(result.as_numpy("OUTPUT")[0][0])
    finally:
        client.stop_stream()
    for sid, values in sequences:
        assert [got[f"{sid}/{i}"] for i in range(len(values))] == running_sums(values), sid
    after = stats_of_grpc(client)
    assert after.inference_count - before.inference_count == sent
    assert after.execution_count - before.execution_count < sent
    assert any(b.batch_size > 1 for b in after.batch_stats)
    client.close()


def stats_of_grpc(client):
    return client.get_inference_statistics(MODEL).model_stats[0]


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_errors_are_tritons(server, protocol):
    module = httpclient if protocol == "http" else grpcclient
    client = module.InferenceServerClient(server.http_url if protocol == "http" else server.grpc_url)
    expected_status = "400" if protocol == "http" else "StatusCode.INVALID_ARGUMENT"

    def error_of(**kwargs):
        with pytest.raises(InferenceServerException) as caught:
            client.infer(MODEL, make_input(module, 1), **kwargs)
        assert caught.value.status() == expected_status, caught.value
        return caught.value.message()

    assert error_of() == f"inference request to model '{MODEL}' must specify a non-zero or non-empty correlation ID"
    assert error_of(sequence_id=424242) == (
        f"inference request for sequence 424242 to model '{MODEL}' must specify the START flag on the first request of the sequence")
    assert error_of(sequence_id="never-started") == (
        f"inference request for sequence never-started to model '{MODEL}' must specify the START flag on the first request of the sequence")
    # After END the id is free again: the next request must START.
    sid = f"ended-{protocol}"
    client.infer(MODEL, make_input(module, 5), sequence_id=sid, sequence_start=True)
    result = client.infer(MODEL, make_input(module, 6), sequence_id=sid, sequence_end=True)
    assert int(result.as_numpy("OUTPUT")[0][0]) == 11
    assert "must specify the START flag" in error_of(sequence_id=sid)
    # A START on a live id restarts it, as Triton does (the earlier sequence ends early).
    client.infer(MODEL, make_input(module, 100), sequence_id=sid, sequence_start=True)
    result = client.infer(MODEL, make_input(module, 7), sequence_id=sid, sequence_start=True, sequence_end=True)
    assert int(result.as_numpy("OUTPUT")[0][0]) == 7
    client.close()


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_sequence_parameters_on_a_model_without_a_sequence_batcher_are_ignored(server, protocol):
    """As Triton: the dynamic batcher does not read the correlation id or the flags."""
    module = httpclient if protocol == "http" else grpcclient
    client = module.InferenceServerClient(server.http_url if protocol == "http" else server.grpc_url)
    a = module.InferInput("a", [1, 2], "FP32")
    a.set_data_from_numpy(np.array([[1, 2]], dtype=np.float32))
    b = module.InferInput("b", [1, 2], "FP32")
    b.set_data_from_numpy(np.array([[3, 4]], dtype=np.float32))
    result = client.infer("add_sub", [a, b], sequence_id=99, sequence_end=True)
    assert result.as_numpy("add").tolist() == [[4, 6]]
    client.close()


def test_config_reports_sequence_batching(server):
    config = httpclient.InferenceServerClient(server.http_url).get_model_config(MODEL)
    batching = config["sequence_batching"]
    assert batching["oldest"]["max_candidate_sequences"] == 8
    assert batching["state"][0]["input_name"] == "INPUT_STATE"
    assert batching["state"][0]["output_name"] == "OUTPUT_STATE"
    assert "dynamic_batching" not in config
    grpc_config = grpcclient.InferenceServerClient(server.grpc_url).get_model_config(MODEL).config
    assert grpc_config.sequence_batching.oldest.max_candidate_sequences == 8
    assert grpc_config.sequence_batching.state[0].data_type == 8  # TYPE_INT32


def test_golden_sequence_config_parses_with_tritons_protobuf():
    """The generated config.pbtxt and JSON of a sequence model are the same ModelConfig to Triton's protobuf."""
    from pathlib import Path

    from google.protobuf import json_format, text_format
    from tritonclient.grpc import model_config_pb2

    golden = Path(__file__).resolve().parents[1] / "unit" / "config" / "golden"
    from_text = text_format.Parse((golden / "sequence.pbtxt").read_text(), model_config_pb2.ModelConfig())
    from_json = json_format.Parse((golden / "sequence.json").read_text(), model_config_pb2.ModelConfig())
    assert from_text == from_json
    batching = from_text.sequence_batching
    assert batching.WhichOneof("strategy_choice") == "direct"
    kinds = [c.control[0].kind for c in batching.control_input]
    assert kinds == [model_config_pb2.ModelSequenceBatching.Control.CONTROL_SEQUENCE_START,
                     model_config_pb2.ModelSequenceBatching.Control.CONTROL_SEQUENCE_END,
                     model_config_pb2.ModelSequenceBatching.Control.CONTROL_SEQUENCE_READY,
                     model_config_pb2.ModelSequenceBatching.Control.CONTROL_SEQUENCE_CORRID]
    assert list(batching.control_input[1].control[0].bool_false_true) == [False, True]
    assert batching.control_input[3].control[0].data_type == model_config_pb2.TYPE_UINT64
    assert batching.state[0].initial_state[0].data_file == "init.bin"


def test_live_sequence_config_is_a_valid_model_config(server):
    from google.protobuf import json_format
    from tritonclient.grpc import model_config_pb2

    config = httpclient.InferenceServerClient(server.http_url).get_model_config(MODEL)
    parsed = json_format.ParseDict(config, model_config_pb2.ModelConfig())
    assert parsed.WhichOneof("scheduling_choice") == "sequence_batching"
    assert parsed.sequence_batching.oldest.preferred_batch_size == [8]
