"""The floor under the side-by-side's concurrency-1 cells against MLServer.

At c=1 a cell's throughput is one over the round trip: the load tool's time plus the server's. This run puts next to
MLServer and tstriton a bare Node server (bench/peers/serve-bare.ts: node:http parsing the JSON and answering it,
node:http2 answering every gRPC call with an empty message unread), the most any Node server could reach on these
cells, with the same tools, pinning and rounds as bench/peers/run.py. It writes the `peers-floor` block of
docs/performance.md.

    npm run build && /opt/peers-pytriton/bin/python bench/peers/floor.py [--rounds N] [--duration S] [--no-write]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as peers  # noqa: E402  (bench/peers/run.py: servers, payloads, tools)

CELLS = [peers.Cell("small", "ghz", "grpc", "add_sub", 1), peers.Cell("small", "wrk", "http-json", "add_sub", 1)]
ORDER = ["bare", "tstriton", "mlserver"]


def measure(rounds: int, duration: float) -> dict:
    table = {**peers.servers(), "bare": peers.Server("bare", ["node", "dist/bench/peers/serve-bare.js"], perf_analyzer=False, startup_s=30)}
    work = Path(tempfile.mkdtemp(prefix="tstriton-floor-"))
    script = work / "post.lua"
    script.write_text(peers.WRK_SCRIPT)
    bodies = peers.payloads()
    for cell in CELLS:
        p = bodies[cell.payload]
        (work / f"{cell.payload}.json").write_bytes(peers.json_body(p))
        (work / f"{cell.payload}.bin").write_bytes(peers.grpc_body(p))
    results = {(s, c.label): [] for s in ORDER for c in CELLS}
    for rnd in range(rounds):
        for name in ORDER[rnd % len(ORDER):] + ORDER[:rnd % len(ORDER)]:
            print(f"round {rnd + 1}/{rounds}: {name}", flush=True)
            server = peers.Running(table[name], work / f"{name}-{rnd}.log")
            try:
                peers.check_identity(name)
                for cell in CELLS:
                    r = peers.run_cell(cell, bodies[cell.payload], work, script, duration)
                    print(f"  {cell.label}: {peers.fmt(r.rps, 1)} req/s, p50 {peers.fmt(r.p50_us)} µs", flush=True)
                    results[(name, cell.label)].append(r)
            finally:
                server.stop()
    return results


def report(results: dict, rounds: int, duration: float) -> str:
    def med(name, cell):
        rs = [r for r in results[(name, cell.label)] if not r.stalled]
        return statistics.median(r.rps for r in rs) if rs else float("nan"), statistics.median(r.p50_us for r in rs) if rs else float("nan")

    lines = [f"{rounds} rounds, {duration:g} s per cell; servers in turn (bare, tstriton, mlserver), the order rotating between rounds.", "",
             "| cell | bare Node req/s (p50 µs) | tstriton req/s (p50 µs) | mlserver req/s (p50 µs) | bare / mlserver | tstriton / mlserver | tstriton / bare |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for cell in CELLS:
        row = [cell.label]
        for name in ORDER:
            rps, p50 = med(name, cell)
            row.append(f"{peers.fmt(rps, 1)} ({peers.fmt(p50)})")
        row += [peers.ratio_text(results[("bare", cell.label)], results[("mlserver", cell.label)]),
                peers.ratio_text(results[("tstriton", cell.label)], results[("mlserver", cell.label)]),
                peers.ratio_text(results[("tstriton", cell.label)], results[("bare", cell.label)])]
        lines.append("| " + " | ".join(row) + " |")
    lines += ["",
              "The bare server (bench/peers/serve-bare.ts) is node:http reading the body, parsing its JSON and answering add_sub,",
              "and node:http2 answering each gRPC call with an empty ModelInferResponse it does not even read: less than any",
              "KServe server must do. Its ratio to MLServer is the most a Node server reaches on these cells on this machine,",
              "against MLServer as it runs by default (no adaptive batching). Ratios are per round, median (lowest–highest)."]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=2)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    if not (peers.ROOT / "dist" / "bench" / "peers" / "serve-bare.js").exists():
        ap.error("run `npm run build` first")
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    load_before = os.getloadavg()[0]
    t0 = time.time()
    results = measure(args.rounds, args.duration)
    block = {"title": "The floor under the c=1 cells", "startedAt": started,
             "command": "bench/peers/floor.py" + (" " + " ".join(sys.argv[1:]) if sys.argv[1:] else ""),
             "source": f"bench/peers/floor.py, {time.time() - t0:.0f} s", "loads": [load_before, os.getloadavg()[0]],
             "loadNote": "a server and a load tool add about 2; other work shared the machine when it is higher",
             "body": report(results, args.rounds, args.duration)}
    writer = ["node", str(peers.ROOT / "dist" / "bench" / "peers" / "write-block.js"), "--block", "peers-floor"] + (["--print"] if args.no_write else [])
    subprocess.run(writer, input=json.dumps(block), text=True, check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
