"""`tstriton analyze --measure-with perf_analyzer`: Triton's perf_analyzer measures each candidate (a process per
step), and the report counts its CPU as the load generator's, beside the server's. The search is one candidate (the
model as bound) at two concurrencies, so that the run takes seconds.
"""
import csv
import shutil
import subprocess

import pytest

from conftest import ROOT


@pytest.mark.runs_once(reason="analyze starts its own servers, with the thread count each candidate sets")
def test_analyze_measures_with_perf_analyzer_and_counts_its_cpu(tmp_path):
    assert shutil.which("perf_analyzer"), "perf_analyzer is not on PATH (scripts/install-test-tools.sh installs it)"
    out = tmp_path / "analyze"
    cmd = ["node", str(ROOT / "dist/lib/cli/main.js"), "analyze", "--module", "examples/add-sub/module.ts",
           "--model", "add_sub", "--shape", "a:16", "--shape", "b:16", "--latency-budget-ms", "50",
           "--search", "brute", "--min-model-batch-size", "64", "--max-model-batch-size", "64", "--queue-delays", "0",
           "--min-instance-count", "1", "--max-instance-count", "1", "--http-thread-counts", "1",
           # Windows that perf_analyzer gets to agree on a shared 2-core machine: it fails a step whose windows do not.
           "--concurrency", "4,8", "--measurement-interval", "500", "--max-trials", "10", "--stability-percentage", "100",
           "--time-budget", "2m",
           "--measure-with", "perf_analyzer", "--output-dir", str(out)]
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout
    report = (out / "report.md").read_text()
    assert "measured with perf_analyzer" in report
    with open(out / "results.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["as_bound"] for r in rows] == ["true"]
    row = rows[0]
    assert row["error"] == "" and float(row["throughput_infer_per_s"]) > 0, row
    assert float(row["server_cpu_percent"]) > 0
    # perf_analyzer ran as a child of analyze and exited after its step: its CPU is counted. The analyze process alone,
    # waiting on it, spends a few percent of a core; perf_analyzer keeping 8 requests in flight spends far more.
    assert float(row["load_cpu_percent"]) > 20, row
