"""tstriton perf against perf_analyzer, alternated in one run, on the example server's add_sub or a repository's model.

    npm run build && python3 bench/perf/compare.py [--rounds 2] [--interval-ms 1000] [--concurrency 1,8,64]
                                                   [--modes http-binary,http-json,grpc] [--no-write]
                                                   [--model-repository DIR --model NAME [--shape name:d1,d2 ...] --block NAME]

The example server (dist/examples/serve.js), or `tstriton serve --model-repository DIR`, runs pinned to CPU 0; each
tool runs pinned to CPU 1, one after the other, in ABBA order from round to round so that a drift of a busy machine hits both alike. Both tools measure
three windows of --interval-ms (`-s 1000 -r 3`: stability is not what is compared here, and perf_analyzer reports
nothing for a step it finds unstable), with `--async` (perf_analyzer's faster mode). Each cell reads a tool's
throughput and p50 from its own report (`-f` CSV), and its CPU per request the same way for both: the process's CPU time (/proc/<pid>/stat, every thread) over the
requests the server counted, both read in the middle of the load (start-up and set-up left out). The table (medians over the rounds) goes to the
`perf-compare` block of docs/perf.md (or --block's, in docs/analyze.md) through bench/peers/write-block.ts.
"""
import argparse
import csv
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The project's Node (the README's set-up puts it in node_modules when the system's is older).
NODE = str(ROOT / "node_modules" / ".bin" / "node") if (ROOT / "node_modules" / ".bin" / "node").exists() else "node"
SERVER_CPU, LOAD_CPU = "0", "1"
HTTP_PORT, GRPC_PORT, METRICS_PORT = 18700, 18701, 18702
MODES = {
    "http-binary": ["-i", "http", "-u", f"127.0.0.1:{HTTP_PORT}"],
    "http-json": ["-i", "http", "-u", f"127.0.0.1:{HTTP_PORT}", "--input-tensor-format", "json", "--output-tensor-format", "json"],
    "grpc": ["-i", "grpc", "-u", f"127.0.0.1:{GRPC_PORT}"],
}
TOOLS = {
    "tstriton": [NODE, str(ROOT / "dist" / "lib" / "cli" / "main.js"), "perf"],
    "perf_analyzer": ["perf_analyzer"],
}


def server_counts(model: str) -> tuple[int, int]:
    """The model's inference and execution (batch) counts, from the server's statistics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{HTTP_PORT}/v2/models/{model}/stats", timeout=10) as r:
        stats = json.load(r)["model_stats"]
    return sum(int(s["inference_count"]) for s in stats), sum(int(s["execution_count"]) for s in stats)


def server_inference_count(model: str) -> int:
    return server_counts(model)[0]


def start_server(repository: str | None) -> subprocess.Popen:
    env = {**os.environ, "TSTRITON_HTTP_PORT": str(HTTP_PORT), "TSTRITON_GRPC_PORT": str(GRPC_PORT), "TSTRITON_METRICS_PORT": str(METRICS_PORT),
           "TSTRITON_LOG_LEVEL": "warn"}
    serve = [str(ROOT / "dist" / "lib" / "cli" / "main.js"), "serve", "--model-repository", repository] if repository else [str(ROOT / "dist" / "examples" / "serve.js")]
    proc = subprocess.Popen(["taskset", "-c", SERVER_CPU, NODE, *serve], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{HTTP_PORT}/v2/health/ready", timeout=2) as r:
                if r.status == 200:
                    return proc
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit("the server did not become ready in 120 s")


def process_cpu_s(pid: int) -> float:
    """CPU time (user + system, every thread) of a running process, from /proc/<pid>/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_tool(args, server_pid: int, tool: str, mode: str, concurrency: int, interval_ms: int, work: Path) -> dict:
    """One run of a tool; its CPU per request is read over the middle of its load, from half a window after the
    server starts counting its requests to two windows in, so that start-up and set-up are left out for both."""
    out = work / f"{tool}-{mode}-{concurrency}.csv"
    shapes = [a for shape in args.shape for a in ("--shape", shape)]
    # --async: perf_analyzer's asynchronous calls (its default is a thread per request in flight, each waiting for its
    # answer); tstriton perf's calls are always asynchronous and it takes the flag for perf_analyzer's command lines.
    cmd = ["taskset", "-c", LOAD_CPU, *TOOLS[tool], "-m", args.model, *MODES[mode], *shapes, "--concurrency-range", str(concurrency),
           "-p", str(interval_ms), "-s", "1000", "-r", "3", "--async", "-f", str(out)]
    start_count = server_inference_count(args.model)
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    cpu_per_request = server_cpu_per_request = batch = float("nan")
    try:
        deadline = time.time() + 60
        while server_inference_count(args.model) == start_count and proc.poll() is None and time.time() < deadline:
            time.sleep(0.01)
        time.sleep(interval_ms / 2000)
        cpu0, server0, (count0, runs0) = process_cpu_s(proc.pid), process_cpu_s(server_pid), server_counts(args.model)
        time.sleep(interval_ms * 1.5 / 1000)
        cpu1, server1, (count1, runs1) = process_cpu_s(proc.pid), process_cpu_s(server_pid), server_counts(args.model)
        cpu_per_request = (cpu1 - cpu0) * 1e6 / max(count1 - count0, 1)
        server_cpu_per_request = (server1 - server0) * 1e6 / max(count1 - count0, 1)
        batch = (count1 - count0) / max(runs1 - runs0, 1)
    except (FileNotFoundError, ProcessLookupError):
        pass  # the tool ended early: its failure is reported below
    stdout, stderr = proc.communicate(timeout=120)
    if proc.returncode != 0 or not out.exists():
        raise SystemExit(f"{tool} {mode} c={concurrency} failed ({proc.returncode}): {stderr.strip() or stdout.strip()[-500:]}")
    with out.open() as f:
        row = next(csv.DictReader(f))
    return {"throughput": float(row["Inferences/Second"]), "p50": float(row["p50 latency"]), "cpu_us_per_request": cpu_per_request,
            "server_cpu_us_per_request": server_cpu_per_request, "batch": batch}


def measure(args) -> dict:
    results: dict = {}
    server = start_server(args.model_repository)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            # Warm the server (JIT, connections) once per mode before anything is recorded.
            for mode in args.modes:
                run_tool(args, server.pid, "tstriton", mode, 8, 500, work)
            for r in range(args.rounds):
                order = list(TOOLS) if r % 2 == 0 else list(reversed(TOOLS))
                for mode in args.modes:
                    for c in args.concurrency:
                        for tool in order:
                            res = run_tool(args, server.pid, tool, mode, c, args.interval_ms, work)
                            results.setdefault(f"{mode}|{c}|{tool}", []).append(res)
                            print(f"round {r + 1} {mode} c={c} {tool}: {res['throughput']:.0f} infer/s, p50 {res['p50']:.0f} us, "
                                  f"{res['cpu_us_per_request']:.1f} us CPU/request, server {res['server_cpu_us_per_request']:.1f} us CPU/request, "
                                  f"batch {res['batch']:.1f}", file=sys.stderr, flush=True)
    finally:
        server.terminate()
        server.wait(timeout=30)
    return results


def report(args, results: dict) -> str:
    med = lambda key, field: statistics.median(x[field] for x in results[key])
    served = (f"{args.model} of `tstriton serve --model-repository` ({', '.join(args.shape) or 'its own shapes'})" if args.model_repository
              else "add_sub (FP32 [1,4] a and b), example server")
    lines = [
        f"{served} pinned to CPU {SERVER_CPU}, each tool pinned to CPU {LOAD_CPU} with `--async`; three windows of "
        f"{args.interval_ms} ms per cell, medians of {args.rounds} rounds, the tools alternated ABBA. Ratios are tstriton perf over "
        "perf_analyzer; CPU is each client process's CPU time (all threads) per request the server counted, read over the middle "
        "of its load; the server's CPU per request and its average batch (inferences per execution) are read over the same span.",
        "",
        "| mode | concurrency | throughput tstriton / perf_analyzer (infer/s) | ratio | p50 tstriton / perf_analyzer (µs) | ratio | client CPU per request tstriton / perf_analyzer (µs) | server CPU per request (µs) | server's batch |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for mode in args.modes:
        for c in args.concurrency:
            ours, theirs = f"{mode}|{c}|tstriton", f"{mode}|{c}|perf_analyzer"
            t_o, t_t = med(ours, "throughput"), med(theirs, "throughput")
            p_o, p_t = med(ours, "p50"), med(theirs, "p50")
            lines.append(f"| {mode} | {c} | {t_o:,.0f} / {t_t:,.0f} | {t_o / t_t:.2f} | {p_o:,.0f} / {p_t:,.0f} | {p_o / p_t:.2f} | "
                         f"{med(ours, 'cpu_us_per_request'):.0f} / {med(theirs, 'cpu_us_per_request'):.0f} | "
                         f"{med(ours, 'server_cpu_us_per_request'):.0f} / {med(theirs, 'server_cpu_us_per_request'):.0f} | "
                         f"{med(ours, 'batch'):.1f} / {med(theirs, 'batch'):.1f} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--interval-ms", type=int, default=1000)
    parser.add_argument("--concurrency", default="1,8,64")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--model-repository", help="serve this repository with tstriton serve instead of the example server")
    parser.add_argument("--model", default="add_sub")
    parser.add_argument("--shape", action="append", help="name:d1,d2 for both tools (default a:4 and b:4 for the example's add_sub)")
    parser.add_argument("--block", default="perf-compare", help="the block of docs/perf.md (or of docs/analyze.md) to write")
    parser.add_argument("--title", default="tstriton perf and perf_analyzer, alternated")
    args = parser.parse_args()
    if args.shape is None:
        args.shape = [] if args.model_repository else ["a:4", "b:4"]
    args.concurrency = [int(c) for c in args.concurrency.split(",")]
    args.modes = args.modes.split(",")
    started = datetime.now(timezone.utc)
    load_before = os.getloadavg()[0]
    results = measure(args)
    body = report(args, results)
    block = {
        "title": args.title,
        "startedAt": started.isoformat(),
        "command": shlex.join(["python3", "bench/perf/compare.py", *sys.argv[1:]]),
        "source": f"bench/perf/compare.py, {platform.node()}",
        "loads": [load_before, os.getloadavg()[0]],
        "loadNote": "other work shares the machine",
        "body": body,
    }
    page = "perf.md" if args.block == "perf-compare" else "analyze.md"
    # analyze.md's blocks sit inside its "Runs on the examples" section.
    if page == "analyze.md":
        block["level"] = 3
    writer = [NODE, str(ROOT / "dist" / "bench" / "peers" / "write-block.js"), "--block", args.block, "--page", page]
    if args.no_write:
        writer.append("--print")
    print(subprocess.run(writer, input=json.dumps(block), capture_output=True, text=True, check=True).stdout)
    print(body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
