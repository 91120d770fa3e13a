"""Metrics interop: the metrics port of a server with Triton's latency summaries and first-response histogram on
(`--metrics-config summary_latencies=true`, `histogram_latencies=true`) shows every Triton family with Triton's
labels, counts equal to the statistics extension's after a tritonclient run, summary quantiles within the latency
the client measured, and perf_analyzer --collect-metrics reads it, GPU metrics included (nvidia-smi answered by
output captured on an H200: test/fixtures/metrics).
"""
import queue
import re
import shutil
import subprocess
import time
import urllib.request

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from conftest import ROOT, start_server, stop_server

NVIDIA_SMI = str(ROOT / "test/fixtures/metrics/nvidia-smi-h200.sh")
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')


@pytest.fixture(scope="module")
def observability():
    running = start_server("test/interop/servers/observability.js", env={
        "TSTRITON_METRICS_CONFIG": "summary_latencies=true;histogram_latencies=true",
        "TSTRITON_NVIDIA_SMI_PATH": NVIDIA_SMI,
    })
    yield running
    assert stop_server(running) == 0


def scrape(server):
    """{family: [(labels, value)]} from the metrics port."""
    text = urllib.request.urlopen(f"http://{server.metrics_url}/metrics").read().decode()
    out = {}
    for line in text.splitlines():
        m = SAMPLE.match(line)
        if not m:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
        out.setdefault(m.group(1), []).append((labels, float(m.group(3))))
    return out


def value(metrics, name, **labels):
    found = [v for l, v in metrics.get(name, []) if all(l.get(k) == x for k, x in labels.items())]
    assert len(found) == 1, (name, labels, metrics.get(name))
    return found[0]


def test_triton_families_labels_and_values_match_the_statistics(observability):
    client = httpclient.InferenceServerClient(observability.http_url)
    slowest_us = 0
    for i in range(30):
        x = httpclient.InferInput("x", [1, 4], "FP32")
        x.set_data_from_numpy(np.full((1, 4), i, np.float32))
        start = time.perf_counter()
        client.infer("echo", [x])
        slowest_us = max(slowest_us, (time.perf_counter() - start) * 1e6)
    grpc = grpcclient.InferenceServerClient(observability.grpc_url)
    done = queue.Queue()
    grpc.start_stream(callback=lambda result, error: done.put(error))
    for _ in range(3):
        text = grpcclient.InferInput("TEXT", [1], "BYTES")
        text.set_data_from_numpy(np.array([b"a b"], dtype=np.object_))
        grpc.async_stream_infer("words", [text])
        for _ in range(2):
            assert done.get(timeout=10) is None
    grpc.stop_stream()

    stats = client.get_inference_statistics("echo")["model_stats"][0]
    metrics = scrape(observability)
    echo = {"model": "echo", "version": "1"}

    # Triton's per-model families carry exactly Triton's labels.
    per_model = ["nv_inference_request_success", "nv_inference_count", "nv_inference_exec_count",
                 "nv_inference_request_duration_us", "nv_inference_queue_duration_us",
                 "nv_inference_compute_input_duration_us", "nv_inference_compute_infer_duration_us",
                 "nv_inference_compute_output_duration_us", "nv_inference_pending_request_count"]
    for family in per_model:
        assert {frozenset(l) for l, _ in metrics[family]} == {frozenset({"model", "version"})}, family
    assert {frozenset(l) for l, _ in metrics["nv_inference_request_failure"]} == {frozenset({"model", "version", "reason"})}
    assert {l["reason"] for l, _ in metrics["nv_inference_request_failure"] if l["model"] == "echo"} == {"REJECTED", "CANCELED", "BACKEND", "OTHER"}
    for stage in ["request", "queue", "compute_input", "compute_infer", "compute_output"]:
        family = f"nv_inference_{stage}_summary_us"
        assert {frozenset(l) for l, _ in metrics[family]} == {frozenset({"model", "version", "quantile"})}, family
        assert {l["quantile"] for l, _ in metrics[family] if l["model"] == "echo"} == {"0.5", "0.9", "0.95", "0.99", "0.999"}
        assert {frozenset(l) for l, _ in metrics[f"{family}_count"]} == {frozenset({"model", "version"})}
    for family in ["nv_cpu_utilization", "nv_cpu_memory_total_bytes", "nv_cpu_memory_used_bytes"]:
        assert metrics[family][0][0] == {}, family
    for family in ["nv_gpu_utilization", "nv_gpu_memory_total_bytes", "nv_gpu_memory_used_bytes", "nv_gpu_power_usage", "nv_gpu_power_limit"]:
        assert [l for l, _ in metrics[family]] == [{"gpu_uuid": "GPU-b0b80e69-7e3d-4f06-ab55-4a366e8e2ca7"}], family

    # Counts equal the statistics extension's.
    inference = stats["inference_stats"]
    assert value(metrics, "nv_inference_request_success", **echo) == inference["success"]["count"] == 30
    assert value(metrics, "nv_inference_count", **echo) == stats["inference_count"]
    assert value(metrics, "nv_inference_exec_count", **echo) == stats["execution_count"]
    assert value(metrics, "nv_inference_request_summary_us_count", **echo) == inference["success"]["count"] + inference["fail"]["count"]
    for stage in ["queue", "compute_input", "compute_infer", "compute_output"]:
        assert value(metrics, f"nv_inference_{stage}_summary_us_count", **echo) == inference[stage]["count"], stage
        assert value(metrics, f"nv_inference_{stage}_summary_us_sum", **echo) == pytest.approx(inference[stage]["ns"] / 1000, abs=1), stage
    assert value(metrics, "tstriton_batch_size_count", **echo) == stats["execution_count"]
    assert value(metrics, "tstriton_batch_size_sum", **echo) == stats["inference_count"]

    # Every quantile lies within what the client measured around the whole request.
    for labels, v in metrics["nv_inference_request_summary_us"]:
        if labels["model"] == "echo":
            assert 0 < v <= slowest_us, (labels, v, slowest_us)

    # The first-response histogram: the decoupled model only, one observation per request.
    words = {"model": "words", "version": "1"}
    assert value(metrics, "nv_inference_first_response_histogram_ms_count", **words) == 3
    assert {l["le"] for l, _ in metrics["nv_inference_first_response_histogram_ms_bucket"]} == {"100", "500", "2000", "5000", "+Inf"}
    assert all(l["model"] == "words" for l, _ in metrics["nv_inference_first_response_histogram_ms_count"])


def test_perf_analyzer_collects_the_metrics(observability):
    exe = shutil.which("perf_analyzer")
    assert exe, "perf_analyzer is not on PATH (scripts/install-test-tools.sh installs it)"
    cmd = [exe, "-m", "echo", "-u", observability.http_url, "--shape", "x:4", "--collect-metrics",
           "--metrics-url", f"{observability.metrics_url}/metrics", "--metrics-interval", "200",
           "--measurement-interval", "500", "--stability-percentage", "200", "--max-trials", "15"]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout
    assert not re.search(r"error|unable to parse", proc.stdout, re.IGNORECASE), proc.stdout
    assert "Server Prometheus Metrics:" in proc.stdout
    assert "GPU-b0b80e69-7e3d-4f06-ab55-4a366e8e2ca7 : 75.79 watts" in proc.stdout, proc.stdout


def test_grafana_dashboard_reads_only_served_metrics(observability):
    """Every metric the dashboard (deploy/grafana/tstriton.json) queries is on the metrics port, with the labels
    its queries group by."""
    import json

    dashboard = json.load(open(ROOT / "deploy/grafana/tstriton.json"))
    metrics = scrape(observability)
    titles = [p["title"] for p in dashboard["panels"]]
    assert titles == ["Throughput", "Request latency quantiles", "Queue time", "Compute time per request", "Batch sizes",
                      "Failures by reason", "Time to first response (decoupled)", "CPU and memory", "GPU", "Instances"]
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            names = set(re.findall(r"\b((?:nv|tstriton)_[a-z_]+)", target["expr"]))
            assert names, target["expr"]
            for name in names:
                assert name in metrics, (panel["title"], name)
                for by in re.findall(r"by \(([^)]*)\)", target["expr"]):
                    for label in [l.strip() for l in by.split(",")]:
                        if label not in ("le", "instance"):  # instance comes from Prometheus' scrape
                            assert any(label in l for l, _ in metrics[name]), (panel["title"], name, label)


def test_worker_custom_metrics_reach_the_metrics_port(observability):
    """The worker-instance model `counted` counts rows and observes batch sizes through context.metrics."""
    client = httpclient.InferenceServerClient(observability.http_url)
    before = scrape(observability)
    counted = {"model": "counted", "version": "1"}
    start_rows = value(before, "counted_rows_total", **counted) if "counted_rows_total" in before else 0
    start_batches = value(before, "counted_batch_requests_count", **counted) if "counted_batch_requests_count" in before else 0
    for rows in [1, 2, 3, 4]:
        x = httpclient.InferInput("x", [rows, 2], "FP32")
        x.set_data_from_numpy(np.ones((rows, 2), np.float32))
        client.infer("counted", [x])
    metrics = scrape(observability)
    assert value(metrics, "counted_rows_total", **counted) - start_rows == 10
    # one request at a time: four batches of one request each
    assert value(metrics, "counted_batch_requests_count", **counted) - start_batches == 4
    assert value(metrics, "counted_batch_requests_bucket", le="1", **counted) == value(metrics, "counted_batch_requests_count", **counted)
    assert {frozenset(l) for l, _ in metrics["counted_rows_total"]} == {frozenset({"model", "version"})}
