"""perf_analyzer over gRPC against the example server: sync, async and streaming, concurrency 1..16,
every run exiting 0 with no request errors.

A 2-core machine is noisy, so each run uses short time windows (300 ms) and a stability threshold loose
enough that noise never fails a level; what is checked is correctness under load, not speed.
"""
import re
import subprocess

import pytest

LEVELS = list(range(1, 17))


@pytest.mark.parametrize("mode", [[], ["--async"], ["--streaming"]], ids=["sync", "async", "streaming"])
def test_perf_analyzer_grpc(server, mode):
    cmd = ["perf_analyzer", "-m", "add_sub", "-u", server.grpc_url, "-i", "grpc",
           "--shape", "a:16", "--shape", "b:16", "--concurrency-range", "1:16",
           "--measurement-mode", "time_windows", "-p", "300", "--stability-percentage", "1000", "--max-trials", "15",
           *mode]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert not re.search(r"error|failed", out, re.IGNORECASE), out
    summary = re.findall(r"^Concurrency: (\d+), throughput: ([\d.]+) infer/sec", out, re.MULTILINE)
    assert [int(c) for c, _ in summary] == LEVELS, out
    assert all(float(t) > 0 for _, t in summary), out
    # Every level measured requests on the client and saw them succeed in the server's statistics (gRPC
    # ModelStatistics, which perf_analyzer reads because the server lists the `statistics` extension).
    blocks = re.split(r"^Request concurrency: ", out, flags=re.MULTILINE)[1:]
    assert len(blocks) == len(LEVELS), out
    for block in blocks:
        assert int(re.search(r"Request count: (\d+)", block).group(1)) > 0, block
        assert int(re.search(r"Successful request count: (\d+)", block).group(1)) > 0, block
