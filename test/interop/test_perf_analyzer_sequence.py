"""perf_analyzer against the sequence model `sequence_accumulate`: sequences of 20 requests, concurrency 1..8,
over HTTP and gRPC (and a gRPC stream), every run exiting 0 with no request errors. perf_analyzer reads the
model's `sequence_batching` from its config and sends `sequence_id`, `sequence_start` and `sequence_end` itself.

Over HTTP the server has one front-end thread, whatever the machine or the pass. When perf_analyzer ends a
concurrency level it sends the last request of every open sequence at once (CompleteOngoingSequence), without
waiting for that sequence's request still in flight, and its HTTP client sends the two on two connections. One
thread reads them in the order they arrive; two or more (tstriton's front-end threads, as Triton's HTTP threads)
may hand the later one to the sequence scheduler first, which then ends the sequence and refuses the overtaken
request ("must specify the START flag on the first request of the sequence"), or refuses the END of a sequence not
started. Over gRPC a context's requests share one connection, which one thread reads in order.
"""
import re
import subprocess

import pytest

from conftest import start_server, stop_server

LEVELS = list(range(1, 9))
ONE_THREAD = "perf_analyzer sends a sequence's last request while its previous one is in flight, on another connection"


@pytest.fixture(scope="module")
def one_thread_server():
    running = start_server(env={"TSTRITON_HTTP_THREAD_COUNT": "1"})
    yield running
    stop_server(running)


@pytest.mark.parametrize("protocol,mode", [
    pytest.param("http", [], id="http", marks=pytest.mark.runs_once(reason=f"its server has one front-end thread: {ONE_THREAD}")),
    pytest.param("grpc", [], id="grpc"),
    pytest.param("grpc", ["--streaming"], id="grpc-streaming"),
])
def test_perf_analyzer_sequence(request, protocol, mode):
    server = request.getfixturevalue("one_thread_server" if protocol == "http" else "server")
    url = server.http_url if protocol == "http" else server.grpc_url
    cmd = ["perf_analyzer", "-m", "sequence_accumulate", "-u", url, "-i", protocol,
           "--sequence-length", "20", "--concurrency-range", "1:8",
           "--measurement-mode", "time_windows", "-p", "300", "--stability-percentage", "1000", "--max-trials", "15",
           *mode]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert not re.search(r"error|failed", out, re.IGNORECASE), out
    summary = re.findall(r"^Concurrency: (\d+), throughput: ([\d.]+) infer/sec", out, re.MULTILINE)
    assert [int(c) for c, _ in summary] == LEVELS, out
    assert all(float(t) > 0 for _, t in summary), out
    blocks = re.split(r"^Request concurrency: ", out, flags=re.MULTILINE)[1:]
    assert len(blocks) == len(LEVELS), out
    for block in blocks:
        assert int(re.search(r"Successful request count: (\d+)", block).group(1)) > 0, block
