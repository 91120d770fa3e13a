"""perf_analyzer against the sequence model `sequence_accumulate`: sequences of 20 requests, concurrency 1..8,
over HTTP and gRPC (and a gRPC stream), every run exiting 0 with no request errors. perf_analyzer reads the
model's `sequence_batching` from its config and sends `sequence_id`, `sequence_start` and `sequence_end` itself.
"""
import re
import subprocess

import pytest

LEVELS = list(range(1, 9))


@pytest.mark.parametrize("protocol,mode", [("http", []), ("grpc", []), ("grpc", ["--streaming"])], ids=["http", "grpc", "grpc-streaming"])
def test_perf_analyzer_sequence(server, protocol, mode):
    url = server.http_url if protocol == "http" else server.grpc_url
    cmd = ["perf_analyzer", "-m", "sequence_accumulate", "-u", url, "-i", protocol,
           "--sequence-length", "20", "--concurrency-range", "1:8",
           "--measurement-mode", "time_windows", "-p", "300", "--stability-percentage", "1000", "--max-trials", "5",
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
