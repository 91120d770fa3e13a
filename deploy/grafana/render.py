"""Renders the panels of deploy/grafana/tstriton.json to docs/images/dashboard.png from real scraped data, with
matplotlib (Grafana and Prometheus do not run on the build machine): starts test/interop/servers/observability.js
(after `npm run build`), drives it for a while with tritonclient (the echo model at changing concurrency, a few
failing requests, streams to the decoupled words model, the worker-instance counted model), scrapes its metrics
port every 2 s, and computes each panel's series as its PromQL does (rates over a 10 s window).

    /opt/peers-pytriton/bin/python deploy/grafana/render.py [--seconds 90]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


class Server:
    """observability.js on free ports (as test/interop/conftest.py starts servers, without pytest)."""

    def __init__(self, env):
        full = dict(os.environ, TSTRITON_HTTP_PORT="0", TSTRITON_GRPC_PORT="0", TSTRITON_METRICS_PORT="0",
                    TSTRITON_HTTP_ADDRESS="127.0.0.1", TSTRITON_GRPC_ADDRESS="127.0.0.1", TSTRITON_METRICS_ADDRESS="127.0.0.1", **env)
        self.proc = subprocess.Popen(["node", str(ROOT / "test/interop/servers/observability.js")], env=full, stdout=subprocess.PIPE, text=True)
        for line in self.proc.stdout:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if record.get("msg") == "serving":
                self.ports = record["ports"]
                break
        else:
            raise RuntimeError("the server did not start")
        threading.Thread(target=lambda: [None for _ in self.proc.stdout], daemon=True).start()
        self.http_url = f"127.0.0.1:{self.ports['http']}"
        self.grpc_url = f"127.0.0.1:{self.ports['grpc']}"
        self.metrics_url = f"127.0.0.1:{self.ports['metrics']}"

    def stop(self):
        self.proc.terminate()
        self.proc.wait(30)

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
WINDOW_S = 10


def scrape(url):
    out = {}
    for line in urllib.request.urlopen(url, timeout=5).read().decode().splitlines():
        m = SAMPLE.match(line)
        if m:
            labels = tuple(sorted(re.findall(r'(\w+)="([^"]*)"', m.group(2) or "")))
            out[(m.group(1), labels)] = float(m.group(3))
    return out


def drive(server, stop, phase):
    import tritonclient.grpc as grpcclient
    import tritonclient.http as httpclient

    def echo_worker(index):
        client = httpclient.InferenceServerClient(server.http_url)
        x = httpclient.InferInput("x", [1, 16], "FP32")
        x.set_data_from_numpy(np.ones((1, 16), np.float32))
        n = 0
        while not stop.is_set():
            if index >= phase["concurrency"]:
                time.sleep(0.05)
                continue
            n += 1
            try:
                client.infer("echo", [x], parameters={"fail": True} if n % 200 == 0 else None)
            except Exception:
                pass

    def counted_worker():
        client = httpclient.InferenceServerClient(server.http_url)
        x = httpclient.InferInput("x", [2, 8], "FP32")
        x.set_data_from_numpy(np.ones((2, 8), np.float32))
        while not stop.is_set():
            client.infer("counted", [x])
            time.sleep(0.01)

    def words_worker():
        client = grpcclient.InferenceServerClient(server.grpc_url)
        done = threading.Semaphore(0)
        client.start_stream(callback=lambda result, error: done.release())
        text = grpcclient.InferInput("TEXT", [1], "BYTES")
        text.set_data_from_numpy(np.array([b"one two three four"], dtype=np.object_))
        while not stop.is_set():
            client.async_stream_infer("words", [text])
            for _ in range(4):
                done.acquire(timeout=5)
            time.sleep(0.1)
        client.stop_stream()

    threads = [threading.Thread(target=echo_worker, args=(i,), daemon=True) for i in range(8)]
    threads += [threading.Thread(target=counted_worker, daemon=True), threading.Thread(target=words_worker, daemon=True)]
    for t in threads:
        t.start()
    return threads


def series(samples, name, **match):
    """{labels: (times, values)} of one family, samples matching `match`."""
    out = {}
    for t, scraped in samples:
        for (n, labels), v in scraped.items():
            d = dict(labels)
            if n == name and all(d.get(k) == x for k, x in match.items()):
                out.setdefault(labels, ([], []))
                out[labels][0].append(t)
                out[labels][1].append(v)
    return out


def rate(times, values):
    times, values = np.array(times), np.array(values)
    r_t, r_v = [], []
    for i, t in enumerate(times):
        j = np.searchsorted(times, t - WINDOW_S)
        if j < i and times[i] > times[j]:
            r_t.append(t)
            r_v.append((values[i] - values[j]) / (times[i] - times[j]))
    return np.array(r_t), np.array(r_v)


def per_model_rate(samples, name, model):
    s = series(samples, name, model=model)
    return rate(*next(iter(s.values()))) if s else (np.array([]), np.array([]))


def ratio(a, b):
    n = min(len(a[1]), len(b[1]))
    with np.errstate(divide="ignore", invalid="ignore"):
        return a[0][:n], np.where(b[1][:n] > 0, a[1][:n] / b[1][:n], np.nan)


def histogram_quantile(samples, name, q, model):
    buckets = series(samples, f"{name}_bucket", model=model)
    rates = {float(dict(labels)["le"]) if dict(labels)["le"] != "+Inf" else np.inf: rate(*tv) for labels, tv in buckets.items()}
    if not rates:
        return np.array([]), np.array([])
    les = sorted(rates)
    times = rates[les[0]][0]
    out = []
    for i in range(len(times)):
        counts = [rates[le][1][i] for le in les]
        total = counts[-1]
        if total <= 0:
            out.append(np.nan)
            continue
        rank = q * total
        for k, le in enumerate(les):
            if counts[k] >= rank:
                lower = les[k - 1] if k > 0 else 0
                below = counts[k - 1] if k > 0 else 0
                upper = le if np.isfinite(le) else lower
                out.append(lower + (upper - lower) * ((rank - below) / (counts[k] - below) if counts[k] > below else 1))
                break
    return times, np.array(out)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=90)
    parser.add_argument("--out", default=str(ROOT / "docs/images/dashboard.png"))
    args = parser.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dashboard = json.load(open(ROOT / "deploy/grafana/tstriton.json"))
    server = Server({"TSTRITON_METRICS_CONFIG": "summary_latencies=true;histogram_latencies=true"})
    url = f"http://{server.metrics_url}/metrics"
    stop = threading.Event()
    phase = {"concurrency": 1}
    samples = []
    try:
        drive(server, stop, phase)
        start = time.time()
        while time.time() - start < args.seconds:
            elapsed = time.time() - start
            # Concurrency steps 1, 2, 4, 8 and back, so the batching and latency panels move.
            phase["concurrency"] = [1, 2, 4, 8, 8, 4, 2, 1][min(7, int(8 * elapsed / args.seconds))]
            samples.append((elapsed, scrape(url)))
            time.sleep(2)
    finally:
        stop.set()
        server.stop()

    panels = {p["title"]: p for p in dashboard["panels"]}
    fig, axes = plt.subplots(5, 2, figsize=(16, 20))
    plots = {}

    def ax_for(title):
        p = panels[title]
        ax = axes[p["gridPos"]["y"] // 8][p["gridPos"]["x"] // 12]
        ax.set_title(title)
        ax.set_xlabel("s")
        ax.grid(alpha=0.3)
        plots[title] = ax
        return ax

    ax = ax_for("Throughput")
    for model in ["echo", "counted", "words"]:
        t, v = per_model_rate(samples, "nv_inference_request_success", model)
        ax.plot(t, v, label=f"{model} requests/s")
    t, v = per_model_rate(samples, "nv_inference_count", "echo")
    ax.plot(t, v, "--", label="echo inferences/s")
    ax.set_ylabel("req/s")

    ax = ax_for("Request latency quantiles")
    for q in ["0.5", "0.9", "0.99"]:
        for labels, (t, v) in series(samples, "nv_inference_request_summary_us", model="echo", quantile=q).items():
            ax.plot(t, v, label=f"echo p{q}")
    ax.plot(*ratio(per_model_rate(samples, "nv_inference_request_duration_us", "echo"), per_model_rate(samples, "nv_inference_request_summary_us_count", "echo")), "--", label="echo mean")
    ax.set_ylabel("µs")

    ax = ax_for("Queue time")
    for labels, (t, v) in series(samples, "nv_inference_queue_summary_us", model="echo", quantile="0.99").items():
        ax.plot(t, v, label="echo p99")
    ax.plot(*ratio(per_model_rate(samples, "nv_inference_queue_duration_us", "echo"), per_model_rate(samples, "nv_inference_request_success", "echo")), "--", label="echo mean")
    ax.set_ylabel("µs")
    twin = ax.twinx()
    for labels, (t, v) in series(samples, "nv_inference_pending_request_count", model="echo").items():
        twin.plot(t, v, ":", color="gray", label="echo pending")
    twin.set_ylabel("pending")

    ax = ax_for("Compute time per request")
    for stage in ["input", "infer", "output"]:
        ax.plot(*ratio(per_model_rate(samples, f"nv_inference_compute_{stage}_duration_us", "echo"), per_model_rate(samples, "nv_inference_request_success", "echo")), label=f"echo {stage}")
    ax.set_ylabel("µs")

    ax = ax_for("Batch sizes")
    ax.plot(*ratio(per_model_rate(samples, "nv_inference_count", "echo"), per_model_rate(samples, "nv_inference_exec_count", "echo")), label="echo mean rows/execution")
    ax.plot(*histogram_quantile(samples, "tstriton_batch_size", 0.99, "echo"), "--", label="echo p99")
    ax.set_ylabel("rows")

    ax = ax_for("Failures by reason")
    for labels, (t, v) in series(samples, "nv_inference_request_failure", model="echo").items():
        r = rate(t, v)
        if r[1].size and r[1].max() > 0:
            ax.plot(*r, label=f"echo {dict(labels)['reason']}")
    ax.set_ylabel("req/s")

    ax = ax_for("Time to first response (decoupled)")
    ax.plot(*histogram_quantile(samples, "nv_inference_first_response_histogram_ms", 0.5, "words"), label="words p50")
    ax.plot(*histogram_quantile(samples, "nv_inference_first_response_histogram_ms", 0.99, "words"), "--", label="words p99")
    ax.set_ylabel("ms")

    ax = ax_for("CPU and memory")
    for name, label in [("nv_cpu_utilization", "CPU utilization")]:
        for _, (t, v) in series(samples, name).items():
            ax.plot(t, v, label=label)
    used = series(samples, "nv_cpu_memory_used_bytes")
    total = series(samples, "nv_cpu_memory_total_bytes")
    if used and total:
        (tu, vu), (_, vt) = next(iter(used.values())), next(iter(total.values()))
        ax.plot(tu, np.array(vu) / np.array(vt), label="memory used")
    ax.set_ylim(0, 1)

    ax = ax_for("GPU")
    ax.text(0.5, 0.5, "no GPU on the machine that rendered this\n(nv_gpu_* appear where nvidia-smi lists one)", ha="center", va="center", transform=ax.transAxes)

    ax = ax_for("Instances")
    for labels, (t, v) in series(samples, "tstriton_instance_execution_count").items():
        d = dict(labels)
        ax.plot(*rate(t, v), label=f"{d['model']} {d['instance']} executions/s")

    for ax in plots.values():
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8, loc="upper left")
    fig.suptitle(f"{dashboard['title']} dashboard (deploy/grafana/tstriton.json), rendered with matplotlib from {len(samples)} scrapes of a live server", fontsize=13)
    fig.tight_layout(rect=(0, 0, 1, 0.98))
    fig.savefig(args.out, dpi=70)
    print(f"wrote {args.out} from {len(samples)} scrapes")


if __name__ == "__main__":
    main()
