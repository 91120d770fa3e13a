"""How fast one core of tstriton perf can go: its load against a bare echo server, so the client is the bound.

    npm run build && python3 bench/perf/ceiling.py [--rounds 3] [--interval-ms 1000] [--concurrency 1,8,64,256] [--no-write]

bench/perf/echo-server.ts (raw TCP, answers built once) runs pinned to CPU 0; `tstriton perf --max-threads 1` runs
pinned to CPU 1, so its one load thread shares that core only with its own main thread. For each concurrency the
table gives the median throughput over the rounds, p50, the load thread's CPU per request (from perf's --json), and
the echo server's CPU per request over the whole run (which says how far the server was from being the bound). The block goes
to `perf-ceiling` in docs/perf.md through bench/peers/write-block.ts.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NODE = str(ROOT / "node_modules" / ".bin" / "node") if (ROOT / "node_modules" / ".bin" / "node").exists() else "node"


def process_cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--interval-ms", type=int, default=1000)
    parser.add_argument("--concurrency", default="1,8,64,256")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    concurrency = [int(c) for c in args.concurrency.split(",")]
    started, load_before = datetime.now(timezone.utc), os.getloadavg()[0]
    server = subprocess.Popen(["taskset", "-c", "0", NODE, str(ROOT / "dist" / "bench" / "perf" / "echo-server.js")], stdout=subprocess.PIPE, text=True)
    port = int(server.stdout.readline().split()[1])
    rows: dict = {c: [] for c in concurrency}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for r in range(args.rounds):
                for c in concurrency:
                    report = Path(tmp) / f"{c}.json"
                    cpu0 = process_cpu_s(server.pid)
                    done = subprocess.run(["taskset", "-c", "1", NODE, str(ROOT / "dist" / "lib" / "cli" / "main.js"), "perf", "-m", "echo", "-u", f"127.0.0.1:{port}",
                                           "--max-threads", "1", "--concurrency-range", str(c), "-p", str(args.interval_ms), "-s", "1000", "-r", "3",
                                           "--json", str(report)], capture_output=True, text=True, timeout=120)
                    if done.returncode != 0:
                        raise SystemExit(f"tstriton perf failed: {done.stderr.strip()}")
                    step = json.loads(report.read_text())["steps"][0]
                    server_us = (process_cpu_s(server.pid) - cpu0) * 1e6 / max(step["completedRequests"], 1)
                    rows[c].append({"throughput": step["throughput"], "cpu": step["clientCpuUsPerRequest"], "p50": step["latencyUs"]["p50"], "server": server_us})
                    print(f"round {r + 1} c={c}: {step['throughput']:.0f} req/s, {step['clientCpuUsPerRequest']:.1f} us CPU/request, p50 {step['latencyUs']['p50']:.0f} us",
                          file=sys.stderr, flush=True)
    finally:
        server.terminate()
        server.wait(timeout=10)
    med = lambda c, k: statistics.median(x[k] for x in rows[c])
    lines = [
        f"`tstriton perf -m echo --max-threads 1` pinned to CPU 1 against bench/perf/echo-server.ts pinned to CPU 0, three windows of "
        f"{args.interval_ms} ms, medians of {args.rounds} rounds. CPU per request is perf's load thread alone; 10⁶ / it is the rate one "
        "core of load thread could drive if nothing else ran there.",
        "",
        "| concurrency | requests/s | p50 (µs) | load-thread CPU per request (µs) | one core's rate at that cost (req/s) | echo server CPU per request (µs) |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for c in concurrency:
        lines.append(f"| {c} | {med(c, 'throughput'):,.0f} | {med(c, 'p50'):,.0f} | {med(c, 'cpu'):.1f} | {1e6 / med(c, 'cpu'):,.0f} | {med(c, 'server'):.1f} |")
    body = "\n".join(lines)
    block = {"title": "How fast one core of tstriton perf goes", "startedAt": started.isoformat(), "command": "python3 bench/perf/ceiling.py " + " ".join(sys.argv[1:]),
             "source": f"bench/perf/ceiling.py, {platform.node()}", "loads": [load_before, os.getloadavg()[0]], "loadNote": "other work shares the machine", "body": body}
    writer = [NODE, str(ROOT / "dist" / "bench" / "peers" / "write-block.js"), "--block", "perf-ceiling", "--page", "perf.md"] + (["--print"] if args.no_write else [])
    subprocess.run(writer, input=json.dumps(block), text=True, check=True, capture_output=True)
    print(body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
