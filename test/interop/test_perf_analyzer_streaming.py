"""perf_analyzer streaming a decoupled model over gRPC: `stream_tokens` of the example server, concurrency 1..4,
every run exiting 0 with no request errors and every request answered with one response per word.

perf_analyzer sends each request on its ModelStreamInfer stream with `triton_enable_empty_final_response`
and matches responses by id; a request ends at its response with `triton_final_response` true (here the empty
final one). A server that dropped the flag, the id or the final response would stall the run or show a
response count that is not 4 per request.

Measurement flags, as in test_perf_analyzer_http.py for a noisy 2-core machine: windows of 250 ms, stability
within 3x, up to 15 windows per level. A `stream_tokens` request takes ~80 ms (4 words, ~20 ms apart) and
holds the model's one instance for as long, so every level measures ~12 requests/s; a run takes ~4 s.
"""
import json
import re
import shutil
import subprocess

import pytest

MEASUREMENT = ["--concurrency-range", "1:4", "--measurement-interval", "250", "--stability-percentage", "200",
               "--max-trials", "15"]
WORDS_PER_REQUEST = 4
TIMEOUT_S = 60


def string_data(_tmp_path):
    return ["--shape", "PROMPT:1", "--string-data", "a b c d"]


def json_input_data(tmp_path):
    data = tmp_path / "prompts.json"
    data.write_text(json.dumps({"data": [{"PROMPT": ["one two three four"]}, {"PROMPT": ["five six seven eight"]}]}))
    return ["--input-data", str(data)]


@pytest.mark.parametrize("inputs", [string_data, json_input_data], ids=["string-data", "input-data-json"])
def test_perf_analyzer_streams_a_decoupled_model(server, tmp_path, inputs):
    exe = shutil.which("perf_analyzer")
    assert exe, "perf_analyzer is not on PATH (scripts/install-test-tools.sh installs it)"
    cmd = [exe, "-m", "stream_tokens", "-i", "grpc", "-u", server.grpc_url, "--streaming", "--async",
           *inputs(tmp_path), *MEASUREMENT]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT_S)
    out = proc.stdout
    assert proc.returncode == 0, out
    assert "Detected decoupled model" in out, out
    assert not re.search(r"error|fail", out, re.IGNORECASE), out

    blocks = re.split(r"^Request concurrency: (\d+)\n", out, flags=re.MULTILINE)[1:]
    assert [int(n) for n in blocks[0::2]] == [1, 2, 3, 4], out
    for level, block in zip(blocks[0::2], blocks[1::2]):
        requests = int(re.search(r"^\s+Request count: (\d+)$", block, re.MULTILINE).group(1))
        throughput = float(re.search(r"^\s+Throughput: ([0-9.]+) infer/sec$", block, re.MULTILINE).group(1))
        responses = float(re.search(r"^\s+Response Throughput: ([0-9.]+) infer/sec$", block, re.MULTILINE).group(1))
        served = int(re.search(r"Successful request count: (\d+)", block).group(1))
        assert requests > 0 and throughput > 0 and served > 0, f"concurrency {level}:\n{block}"
        # One response per word; the empty final response is not counted.
        assert responses / throughput == pytest.approx(WORDS_PER_REQUEST, rel=0.15), f"concurrency {level}:\n{block}"
