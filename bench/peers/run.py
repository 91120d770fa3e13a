"""Side by side: tstriton against PyTriton (tritonserver) and MLServer, the same models and the same load tools.

    bash bench/peers/install.sh                        # once: venvs, ghz, wrk, perf_analyzer
    npm run bench:peers [-- --rounds 3 --duration 2 --servers tstriton,pytriton,mlserver --cells small,mlp,large
                            --no-write]               # builds, then runs this file in the PyTriton venv

One server at a time runs pinned to CPU 0 (`taskset -c 0`, with every process it starts); the load tool runs pinned
to CPU 1. In each round every server serves every cell it can; the order of the servers rotates from round to round.
The ratio of a cell is tstriton's throughput over the peer's in the same round; the table gives the median over the
rounds and the range. The block goes to docs/performance.md through write-block.ts (bench/harness/doc-block.ts),
the plots to docs/images/.
"""
import argparse
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
IMAGES = ROOT / "docs" / "images"
RESULTS = ROOT / "bench" / "results"
PROTO_DIR = ROOT / "lib" / "protocol" / "proto"
PYTRITON_VENV = Path(os.environ.get("PEERS_PYTRITON_VENV", "/opt/peers-pytriton"))
MLSERVER_VENV = Path(os.environ.get("PEERS_MLSERVER_VENV", "/opt/peers-mlserver"))
HTTP_PORT, GRPC_PORT = 8000, 8001
SERVER_CPU, LOAD_CPU = "0", "1"
LARGE = 1_000_000


# ---------------------------------------------------------------------------------------------------------------
# Servers


@dataclass
class Server:
    name: str
    command: list
    cwd: Path = ROOT
    env: dict = field(default_factory=dict)
    #: Whether the server has Triton's model-config endpoint, which perf_analyzer needs.
    perf_analyzer: bool = True
    startup_s: float = 120


def servers() -> dict:
    libdir = subprocess.run([str(PYTRITON_VENV / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_config_var('LIBDIR'))"],
                            capture_output=True, text=True, check=True).stdout.strip()
    return {
        "tstriton": Server("tstriton", ["node", "dist/bench/peers/serve-tstriton.js"],
                           env={"TSTRITON_HTTP_PORT": str(HTTP_PORT), "TSTRITON_GRPC_PORT": str(GRPC_PORT)}),
        "pytriton": Server("pytriton", [str(PYTRITON_VENV / "bin" / "python"), str(HERE / "serve_pytriton.py")],
                           env={"LD_LIBRARY_PATH": libdir + os.pathsep + os.environ.get("LD_LIBRARY_PATH", "")}),
        "mlserver": Server("mlserver", [str(MLSERVER_VENV / "bin" / "mlserver"), "start", "."], cwd=HERE / "mlserver", perf_analyzer=False),
    }


class Running:
    """A server started in its own process group, pinned to SERVER_CPU; stopped with everything it started."""

    def __init__(self, server: Server, log: Path):
        self.server = server
        self.log = open(log, "wb")
        env = {**os.environ, **server.env}
        self.proc = subprocess.Popen(["taskset", "-c", SERVER_CPU, *server.command], cwd=server.cwd, env=env,
                                     stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.time() + server.startup_s
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{server.name} exited with {self.proc.returncode} while starting (log: {log})")
            if all(ready(m) for m in ("add_sub", "identity", "mlp")):
                return
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"{server.name} not ready after {server.startup_s} s (log: {log})")

    def stop(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
        self.log.close()
        # The ports must be free before the next server starts.
        deadline = time.time() + 30
        while time.time() < deadline and (port_open(HTTP_PORT) or port_open(GRPC_PORT)):
            time.sleep(0.2)


def ready(model: str) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{HTTP_PORT}/v2/models/{model}/ready", timeout=1) as r:
            return r.status == 200
    except OSError:
        return False


def port_open(port: int) -> bool:
    import socket
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


# ---------------------------------------------------------------------------------------------------------------
# Payloads: the same request for every server and tool


@dataclass(frozen=True)
class Payload:
    model: str
    #: (name, shape without the batch dim, values)
    inputs: tuple

    def arrays(self):
        return [(name, np.asarray(values, np.float32).reshape((1, *shape))) for name, shape, values in self.inputs]


def payloads() -> dict:
    rng = np.random.default_rng(7)

    def vec(n):
        v = rng.standard_normal(n).astype(np.float32)
        # ghz reads its binary request through Go's text/template: a "{{" in the bytes breaks it. No byte 0x7b.
        b = v.view(np.uint8)
        b[b == 0x7B] = 0x7C
        return v
    return {
        "add_sub": Payload("add_sub", (("INPUT0", (16,), vec(16)), ("INPUT1", (16,), vec(16)))),
        "identity16": Payload("identity", (("INPUT0", (16,), vec(16)),)),
        "mlp": Payload("mlp", (("x", (1024,), vec(1024)),)),
        "identity4MB": Payload("identity", (("INPUT0", (LARGE,), vec(LARGE)),)),
    }


def json_body(p: Payload) -> bytes:
    inputs = [{"name": n, "datatype": "FP32", "shape": list(a.shape), "data": a.ravel().tolist()} for n, a in p.arrays()]
    return json.dumps({"inputs": inputs}).encode()


def grpc_body(p: Payload) -> bytes:
    from tritonclient.grpc import service_pb2
    req = service_pb2.ModelInferRequest(model_name=p.model)
    for n, a in p.arrays():
        t = req.inputs.add()
        t.name, t.datatype = n, "FP32"
        t.shape.extend(a.shape)
        req.raw_input_contents.append(a.tobytes())
    return req.SerializeToString()


# ---------------------------------------------------------------------------------------------------------------
# Load tools: each returns throughput (req/s), p50 and p99 latency (µs), and the errors seen


@dataclass
class Result:
    rps: float
    p50_us: float
    p99_us: float
    errors: int = 0
    #: The tool did not finish in its time (see run_cell).
    stalled: bool = False


STALLED = Result(float("nan"), float("nan"), float("nan"), stalled=True)


def pinned(cmd: list) -> list:
    return ["taskset", "-c", LOAD_CPU, *cmd]


def perf_analyzer(protocol: str, p: Payload, c: int, duration: float) -> Result:
    url = f"127.0.0.1:{GRPC_PORT if protocol == 'grpc' else HTTP_PORT}"
    shapes = []
    # Only identity's input has a variable dim; naming the shape of fixed inputs too made perf_analyzer 2.51 stall
    # at concurrency 64 (it kept sending but never ended a measurement).
    for n, a in p.arrays() if p.model == "identity" else []:
        shapes += ["--shape", f"{n}:{','.join(str(d) for d in a.shape[1:])}"]
    # perf_analyzer 2.51 sums up a window on its main thread in time that grows faster than the window's request
    # count; at ~16k requests a window (tstriton, HTTP, c=64, 1 s) it never finished on the shared load core while
    # the load went on. At concurrency 64 the window is therefore at most 0.5 s (for every server in the cell).
    window_ms = int(min(duration, 0.5) * 1000) if c >= 64 else int(duration * 1000)
    cmd = ["perf_analyzer", "-m", p.model, "-i", protocol, "-u", url, "-b", "1", "--concurrency-range", str(c),
           "--measurement-interval", str(window_ms), "--stability-percentage", "50", "--max-trials", "6", *shapes]
    out = subprocess.run(pinned(cmd), capture_output=True, text=True, timeout=duration * 8 + 45)
    text = out.stdout + out.stderr
    m = re.search(r"Throughput: ([\d.]+) infer/sec", text)
    if out.returncode != 0 or not m:
        raise RuntimeError(f"perf_analyzer failed ({out.returncode}): {text[-2000:]}")
    return Result(float(m.group(1)), float(re.search(r"p50 latency: (\d+) usec", text).group(1)),
                  float(re.search(r"p99 latency: (\d+) usec", text).group(1)))


def ghz(body: Path, c: int, duration: float) -> Result:
    cmd = ["ghz", "--insecure", "--import-paths", str(PROTO_DIR), "--proto", str(PROTO_DIR / "grpc_service.proto"),
           "--call", "inference.GRPCInferenceService/ModelInfer", "--binary-file", str(body), "--connections", "1",
           "-c", str(c), "-z", f"{duration}s", "--duration-stop", "ignore", "--timeout", "60s", "-O", "json", f"127.0.0.1:{GRPC_PORT}"]
    out = subprocess.run(pinned(cmd), capture_output=True, text=True, timeout=duration + 120)
    if out.returncode != 0:
        raise RuntimeError(f"ghz failed ({out.returncode}): {(out.stdout + out.stderr)[-2000:]}")
    report = json.loads(out.stdout)
    lat = {d["percentage"]: d["latency"] / 1000 for d in report.get("latencyDistribution") or []}
    codes = report.get("statusCodeDistribution") or {}
    errors = sum(n for code, n in codes.items() if code != "OK")
    ok = codes.get("OK", 0)
    return Result(ok / (report["total"] / 1e9) if report.get("total") else 0.0, lat.get(50, float("nan")), lat.get(99, float("nan")), errors)


WRK_SCRIPT = """
local f = assert(io.open(os.getenv("PEERS_BODY"), "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
"""


def wrk(body: Path, model: str, c: int, duration: float, script: Path) -> Result:
    cmd = ["wrk", "-t", "1", "-c", str(c), "-d", f"{max(1, round(duration))}s", "--timeout", "60s", "--latency", "-s", str(script),
           f"http://127.0.0.1:{HTTP_PORT}/v2/models/{model}/infer"]
    out = subprocess.run(pinned(cmd), capture_output=True, text=True, timeout=duration + 120, env={**os.environ, "PEERS_BODY": str(body)})
    text = out.stdout
    m = re.search(r"Requests/sec:\s+([\d.]+)", text)
    if out.returncode != 0 or not m:
        raise RuntimeError(f"wrk failed ({out.returncode}): {(text + out.stderr)[-2000:]}")
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    errors = int(non2xx.group(1)) if non2xx else 0
    sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    if sock:
        errors += sum(int(x) for x in sock.groups())
    total = re.search(r"(\d+) requests in", text)
    rps = float(m.group(1))
    if total and int(total.group(1)) > 0:
        rps *= max(0.0, 1 - errors / int(total.group(1)))
    return Result(rps, wrk_latency(text, "50%"), wrk_latency(text, "99%"), errors)


def wrk_latency(text: str, pct: str) -> float:
    m = re.search(rf"^\s+{re.escape(pct)}\s+([\d.]+)(us|ms|s)\s*$", text, re.M)
    if not m:
        return float("nan")
    return float(m.group(1)) * {"us": 1, "ms": 1e3, "s": 1e6}[m.group(2)]


# ---------------------------------------------------------------------------------------------------------------
# Cells


@dataclass(frozen=True)
class Cell:
    group: str  # small, mlp, large
    tool: str  # perf_analyzer, ghz, wrk
    protocol: str  # grpc, http-binary, http-json
    payload: str
    c: int

    @property
    def label(self) -> str:
        return f"{self.payload} {self.protocol} ({self.tool}) c={self.c}"


def cells() -> list:
    out = []
    for c in (1, 8, 64):
        out += [Cell("small", "perf_analyzer", "grpc", "add_sub", c), Cell("small", "perf_analyzer", "http-binary", "add_sub", c),
                Cell("small", "ghz", "grpc", "add_sub", c), Cell("small", "wrk", "http-json", "add_sub", c)]
    out += [Cell("small", "ghz", "grpc", "identity16", 8), Cell("small", "wrk", "http-json", "identity16", 8)]
    out += [Cell("mlp", "perf_analyzer", "grpc", "mlp", 8), Cell("mlp", "ghz", "grpc", "mlp", 8), Cell("mlp", "wrk", "http-json", "mlp", 8)]
    out += [Cell("large", "perf_analyzer", "grpc", "identity4MB", 4), Cell("large", "ghz", "grpc", "identity4MB", 4),
            Cell("large", "wrk", "http-json", "identity4MB", 4), Cell("large", "perf_analyzer", "http-binary", "identity4MB", 4)]
    return out


def server_version() -> str:
    """What the running server says it is, from the KServe server metadata."""
    with urllib.request.urlopen(f"http://127.0.0.1:{HTTP_PORT}/v2", timeout=10) as r:
        meta = json.loads(r.read())
    return f"{meta.get('name', '?')} {meta.get('version', '?')}"


def check_identity(server: str) -> None:
    """The server answers identity with its input, over HTTP JSON: the same model everywhere."""
    values = [0.5, -1.25, 3.0, 1e-3]
    body = json.dumps({"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 4], "data": values}]}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{HTTP_PORT}/v2/models/identity/infer", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        out = json.loads(r.read())["outputs"][0]["data"]
    if not np.allclose(np.asarray(out, np.float32).ravel(), np.asarray(values, np.float32)):
        raise RuntimeError(f"{server}: identity returned {out}")


# ---------------------------------------------------------------------------------------------------------------
# The run


def run_cell(cell: Cell, p: Payload, work: Path, script: Path, duration: float) -> Result:
    """One cell's load. A tool that does not finish in its time is recorded as stalled, and the run goes on: on this
    machine perf_analyzer over HTTP at concurrency 64 now and then stops finishing its measurement (see the notes)."""
    try:
        if cell.tool == "perf_analyzer":
            return perf_analyzer("grpc" if cell.protocol == "grpc" else "http", p, cell.c, duration)
        if cell.tool == "ghz":
            return ghz(work / f"{cell.payload}.bin", cell.c, duration)
        return wrk(work / f"{cell.payload}.json", p.model, cell.c, duration, script)
    except subprocess.TimeoutExpired:
        return STALLED


def run(args) -> dict:
    table = servers()
    chosen = [table[s] for s in args.servers]
    work = Path(tempfile.mkdtemp(prefix="tstriton-peers-"))
    script = work / "post.lua"
    script.write_text(WRK_SCRIPT)
    bodies = {}
    for key, p in payloads().items():
        (work / f"{key}.json").write_bytes(json_body(p))
        (work / f"{key}.bin").write_bytes(grpc_body(p))
        bodies[key] = p
    todo = [c for c in cells() if c.group in args.cells]
    results: dict = {}  # (server, cell label) -> [Result per round]
    served_by: dict = {}
    for rnd in range(args.rounds):
        order = chosen[rnd % len(chosen):] + chosen[:rnd % len(chosen)]
        for server in order:
            print(f"round {rnd + 1}/{args.rounds}: {server.name}", flush=True)
            running = Running(server, work / f"{server.name}-{rnd}.log")
            try:
                check_identity(server.name)
                served_by[server.name] = server_version()
                for cell in todo:
                    if cell.tool == "perf_analyzer" and not server.perf_analyzer:
                        continue
                    # A 4 MB request takes tens to hundreds of milliseconds: the large cells measure longer.
                    duration = args.duration * ({"wrk": 8, "ghz": 4, "perf_analyzer": 2}[cell.tool] if cell.group == "large" else 1)
                    r = run_cell(cell, bodies[cell.payload], work, script, duration)
                    results.setdefault((server.name, cell.label), []).append(r)
                    print(f"  {cell.label}: " + ("stalled" if r.stalled else f"{r.rps:,.1f} req/s, p50 {r.p50_us:,.0f} µs, p99 {r.p99_us:,.0f} µs")
                          + (f", {r.errors} errors" if r.errors else ""), flush=True)
            finally:
                running.stop()
    return {"cells": todo, "results": results, "servers": [s.name for s in chosen], "rounds": args.rounds, "duration": args.duration, "served_by": served_by,
            "groups": args.cells, "versions": versions()}


# ---------------------------------------------------------------------------------------------------------------
# Report


def versions() -> dict:
    def cmd(c):
        try:
            out = subprocess.run(c, capture_output=True, text=True, timeout=60)
            return (out.stdout + out.stderr).strip()
        except OSError:
            return "?"
    pip = lambda venv, pkg: cmd([str(venv / "bin" / "python"), "-c", f"import importlib.metadata as m; print(m.version('{pkg}'))"])  # noqa: E731
    # ghz built by `go install` says "dev" to --version; the module version is in the binary's build info.
    ghz_mod = re.search(r"^\s*mod\s+github.com/bojand/ghz\s+(\S+)", cmd(["/usr/local/go/bin/go", "version", "-m", shutil.which("ghz") or "ghz"]), re.M)
    pa = re.search(r"Version (\S+)", cmd(["perf_analyzer", "--version"]))
    ort_node = json.loads((ROOT / "node_modules" / "onnxruntime-node" / "package.json").read_text()).get("version", "?")
    return {
        "tstriton": cmd(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"])
        + (" with uncommitted changes in lib/" if cmd(["git", "-C", str(ROOT), "status", "--porcelain", "lib"]) else ""),
        "node": cmd(["node", "--version"]),
        "ort_node": ort_node,
        "pytriton": pip(PYTRITON_VENV, "nvidia-pytriton"),
        "ort_pytriton": pip(PYTRITON_VENV, "onnxruntime"),
        "python_pytriton": cmd([str(PYTRITON_VENV / "bin" / "python"), "-c", "import platform; print(platform.python_version())"]),
        "mlserver": pip(MLSERVER_VENV, "mlserver"),
        "python_mlserver": cmd([str(MLSERVER_VENV / "bin" / "python"), "-c", "import platform; print(platform.python_version())"]),
        "ort_mlserver": pip(MLSERVER_VENV, "onnxruntime"),
        "perf_analyzer": pa.group(1) if pa else "?",
        "ghz": ghz_mod.group(1) if ghz_mod else "?",
        "wrk": cmd(["bash", "-c", "wrk -v 2>&1 | head -1 | cut -d' ' -f2"]),
    }


def ratio_text(ours: list, theirs: list) -> str:
    ratios = [a.rps / b.rps for a, b in zip(ours, theirs) if not (a.stalled or b.stalled) and b.rps > 0]
    if not ratios:
        return "—"
    return f"{statistics.median(ratios):.2f}× ({min(ratios):.2f}–{max(ratios):.2f})"


def fmt(x: float, digits=0) -> str:
    return "—" if x != x else f"{x:,.{digits}f}"


def report(data: dict) -> str:
    """The block's body: run, versions, the table, the plots and the method (the title and provenance lines are
    added by write-block.ts)."""
    res, cells_, names = data["results"], data["cells"], data["servers"]
    peers = [s for s in names if s != "tstriton"]
    v = data["versions"]
    lines = [f"{data['rounds']} round{'s' if data['rounds'] != 1 else ''}, {data['duration']} s per cell (the 4 MB cells 8× that "
             f"with wrk, 4× with ghz and 2× with perf_analyzer); servers {', '.join(names)}; cells {', '.join(data['groups'])}.", "",
             f"Versions: tstriton at {v['tstriton']} on Node {v['node']} (onnxruntime-node {v['ort_node']}); "
             + (f"PyTriton {v['pytriton']} on Python {v['python_pytriton']} (onnxruntime {v['ort_pytriton']}); " if "pytriton" in names else "")
             + (f"MLServer {v['mlserver']} on Python {v['python_mlserver']} (onnxruntime {v['ort_mlserver']}); " if "mlserver" in names else "")
             + f"as the servers name themselves (`GET /v2`): {'; '.join(f'{k}: {x}' for k, x in data['served_by'].items())}; "
             + f"perf_analyzer {v['perf_analyzer']}, ghz {v['ghz']}, wrk {v['wrk']}.", ""]
    head = "| " + " | ".join(["cell", *(f"{s} req/s (p50 / p99 µs)" for s in names), *(f"tstriton / {p}" for p in peers)]) + " |"
    lines += [head, "| --- |" + " ---: |" * (len(names) + len(peers))]
    for cell in cells_:
        row = [cell.label]
        for s in names:
            rs = res.get((s, cell.label))
            if not rs:
                row.append("—")
                continue
            done = [r for r in rs if not r.stalled]
            stalled = len(rs) - len(done)
            note = (f", {sum(r.errors for r in rs)} errors" if any(r.errors for r in rs) else "") + (f", stalled in {stalled} of {len(rs)} rounds" if stalled else "")
            if not done:
                row.append(f"stalled in all {len(rs)} rounds" + (f", {sum(r.errors for r in rs)} errors" if any(r.errors for r in rs) else ""))
                continue
            med = lambda f: statistics.median(f(r) for r in done)  # noqa: E731
            row.append(f"{med(lambda r: r.rps):,.1f} ({fmt(med(lambda r: r.p50_us))} / {fmt(med(lambda r: r.p99_us))})" + note)
        for p in peers:
            ours, theirs = res.get(("tstriton", cell.label)), res.get((p, cell.label))
            row.append(ratio_text(ours, theirs) if ours and theirs else "—")
        lines.append("| " + " | ".join(row) + " |")
    lines += ["", "![Throughput against concurrency, add_sub, per protocol and tool](images/peers-throughput.png)", "",
              "![p50 and p99 latency, add_sub at c=8](images/peers-latency.png)", "",
              "![The mlp cells](images/peers-mlp.png)", "",
              "![The 4 MB identity cells](images/peers-large.png)", "", METHOD]
    return "\n".join(lines)


METHOD = """**Method.**
- The same three models in every server: `add_sub` (two FP32 [16] inputs, their sum and difference), `identity`
  (FP32 [-1], output = input; 16 elements for the small cells, 1,000,000 = 4 MB in and 4 MB out for the large ones)
  and `mlp` (test/fixtures/onnx/mlp_1024x4.onnx, four relu(x·W) layers with 1024×1024 weights, x FP32 [batch,1024],
  run by onnxruntime with one intra-op and one inter-op thread: onnxruntime-node on a worker thread in tstriton
  (`onnxModel`), the Python package in the other two). Servers: bench/peers/serve-tstriton.ts,
  bench/peers/serve_pytriton.py, bench/peers/mlserver/ (settings and a runtime per model). Every request carries
  batch 1; each server is checked once to answer `identity` with its input before its load.
- Batching as each server has it, the same max batch size: tstriton and PyTriton with their dynamic batcher and no
  queue delay (`max_queue_delay_microseconds` 0; `max_batch_size` 64 for add_sub and mlp, 8 for identity).
  MLServer's adaptive batcher always waits for a batch to fill, up to `max_batch_time`: it is on for `mlp`
  (`max_batch_size` 64, `max_batch_time` 1 ms, so at c=8 each batch waits the full 1 ms) and off for `add_sub` and
  `identity` (`max_batch_size` 0), where the wait would be most of the request's time.
- One server at a time, pinned with every process it starts to CPU 0 (`taskset -c 0`); the load tool pinned to
  CPU 1. Each round starts every server once and runs every cell against it; the server order rotates between
  rounds. A ratio is tstriton's throughput over the peer's in the same round; the table gives the median over
  rounds and, in brackets, the lowest and highest round.
- Tools, the same for every server in a cell. *perf_analyzer* (`-b 1 --concurrency-range c`, windows of the
  cell's duration, at most 0.5 s at c=64, stability 50 %, at most 6 windows; gRPC, and HTTP with binary tensors):
  tstriton and PyTriton only, since it reads the model config, which MLServer does not serve. *ghz* over one
  HTTP/2 connection, c calls in flight, the request a serialized `ModelInferRequest` with `raw_input_contents`
  (`--binary-file`, against lib/protocol/proto/grpc_service.proto). *wrk* with one thread and c keep-alive
  connections posting the JSON request (`data` in, JSON out). Throughput and latency are what the tool reports
  (perf_analyzer: its stable windows; ghz: per call; wrk: per request). Errors (non-200 answers, failed calls) are
  counted beside the figure and left out of the throughput.
- Caveats that make a cell unfair. PyTriton is tritonserver (C++) plus a Python process per model, all on the one
  pinned core, with a request crossing between them through shared memory and ZeroMQ: its small-request figures
  measure that hand-off more than either side. MLServer's small and 4 MB cells run without its adaptive batching
  (as MLServer does unless a model's settings turn it on); its mlp cells with it pay its 1 ms wait. perf_analyzer and ghz spend more CPU per request than wrk, and on the
  small cells at c=64 the load core, not the server, can be the bound (most of all for tstriton, the fastest).
  The JSON 4 MB cell encodes a million floats as text: it measures JSON parsers and printers. tstriton runs with its
  default V8 marking triggers (80 / 95 %): with V8's own rule, a 4 MB gRPC round could mark without pause and run
  about 40 % slower ("Large tensors over gRPC" above).
- A cell marked *stalled* is one whose tool did not finish in its time (8 windows and 45 s); it counts as a failed
  round, never as a figure. perf_analyzer 2.51 sums up each window on its main thread
  (`InferenceProfiler::ValidLatencyMeasurement`), in time that grows faster than the window's request count; with
  1 s windows against tstriton over HTTP at c=64 (about 16k requests a window) that thread, sharing the load core
  with 64 sending threads, never finished a window while the load went on, hence the 0.5 s windows at c=64.
- The machine runs other work; the load average in the second line says how much. Single rounds move by ±10 % or
  more; the medians and paired ratios are the figures to read.
- Run: `bash bench/peers/install.sh` once (PyTriton, onnxruntime and matplotlib in /opt/peers-pytriton, MLServer and
  onnxruntime in /opt/peers-mlserver, ghz, wrk, perf_analyzer), then `npm run bench:peers` (build, 3 rounds of 2 s
  cells, about 20 minutes). Flags after `--`: `--rounds N`, `--duration S`, `--servers tstriton,pytriton,mlserver`,
  `--cells small,mlp,large`, `--no-write` (print the block, leave this file and the plots alone), `--from FILE`
  (make the block and plots again from a run's figures, which every run saves in bench/results/). Smoke test:
  `npm run bench:peers -- --rounds 1 --duration 1 --no-write` (about 4 minutes)."""


def plots(data: dict) -> None:
    import matplotlib
    import matplotlib.ticker
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    res, names = data["results"], data["servers"]
    colors = {"tstriton": "#1f77b4", "pytriton": "#76b900", "mlserver": "#d62728"}
    def med(s, label, f):
        done = [f(r) for r in res.get((s, label), []) if not r.stalled]
        return statistics.median(done) if done else float("nan")
    IMAGES.mkdir(parents=True, exist_ok=True)

    combos = [("grpc", "perf_analyzer"), ("http-binary", "perf_analyzer"), ("grpc", "ghz"), ("http-json", "wrk")]
    fig, axes = plt.subplots(1, len(combos), figsize=(16, 4), sharey=False)
    for ax, (protocol, tool) in zip(axes, combos):
        for s in names:
            xs, ys = [], []
            for c in (1, 8, 64):
                y = med(s, Cell("small", tool, protocol, "add_sub", c).label, lambda r: r.rps)
                if y == y:
                    xs.append(c)
                    ys.append(y)
            if xs:
                ax.plot(xs, ys, marker="o", label=s, color=colors.get(s))
        ax.set_xscale("log", base=2)
        ax.set_xticks([1, 8, 64], ["1", "8", "64"])
        ax.set_title(f"add_sub, {protocol} ({tool})")
        ax.set_xlabel("concurrency")
        ax.set_ylabel("requests/s")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(IMAGES / "peers-throughput.png", dpi=110)
    plt.close(fig)

    fig, axes = plt.subplots(1, len(combos), figsize=(16, 4))
    for ax, (protocol, tool) in zip(axes, combos):
        label = Cell("small", tool, protocol, "add_sub", 8).label
        shown = [s for s in names if (s, label) in res]
        x = np.arange(len(shown))
        ax.bar(x - 0.2, [med(s, label, lambda r: r.p50_us) for s in shown], 0.4, label="p50", color="#4c72b0")
        ax.bar(x + 0.2, [med(s, label, lambda r: r.p99_us) for s in shown], 0.4, label="p99", color="#dd8452")
        ax.set_xticks(x, shown)
        ax.set_title(f"add_sub c=8, {protocol} ({tool})")
        ax.set_ylabel("latency, µs")
        ax.grid(alpha=0.3, axis="y")
        ax.legend()
    fig.tight_layout()
    fig.savefig(IMAGES / "peers-latency.png", dpi=110)
    plt.close(fig)

    # The 4 MB JSON cell runs at a few requests per second beside tens over binary: a log scale shows both.
    for group, title, name, log in (("mlp", "mlp (ONNX, 4 × 1024×1024), batch 1 per request, concurrency 8", "peers-mlp.png", False),
                                    ("large", "identity, 4 MB in and out, concurrency 4 (log scale)", "peers-large.png", True)):
        chosen = [c for c in data["cells"] if c.group == group]
        if not chosen:
            continue
        fig, ax = plt.subplots(figsize=(10, 4))
        width = 0.8 / max(1, len(names))
        x = np.arange(len(chosen))
        for i, s in enumerate(names):
            ys = [med(s, c.label, lambda r: r.rps) for c in chosen]
            bars = ax.bar(x + (i - (len(names) - 1) / 2) * width, ys, width, label=s, color=colors.get(s))
            ax.bar_label(bars, ["" if y != y else f"{y:,.1f}" if y < 10 else f"{y:,.0f}" for y in ys], fontsize=8)
        if log:
            ax.set_yscale("log")
            ax.set_ylim(bottom=1)
            ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda y, _: f"{y:g}"))
        ax.set_xticks(x, [f"{c.protocol}\n({c.tool})" for c in chosen])
        ax.set_title(title)
        ax.set_ylabel("requests/s")
        ax.grid(alpha=0.3, axis="y")
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
        fig.tight_layout()
        fig.savefig(IMAGES / name, dpi=110)
        plt.close(fig)


def save(data: dict, block: dict) -> Path:
    """Keeps a run's figures (bench/results/, not committed), so the block and plots can be made again with --from."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"peers-{block['startedAt'].replace(':', '')}.json"
    rows = [{"server": server, "cell": asdict(cell), "rounds": [asdict(r) for r in data["results"][(server, cell.label)]]}
            for cell in data["cells"] for server in data["servers"] if (server, cell.label) in data["results"]]
    plain = {k: v for k, v in data.items() if k not in ("cells", "results")}
    out.write_text(json.dumps({"block": block, "data": {**plain, "cells": [asdict(c) for c in data["cells"]], "rows": rows}}, indent=1))
    return out


def load(path: Path) -> tuple:
    saved = json.loads(path.read_text())
    data = saved["data"]
    cells_ = [Cell(**c) for c in data.pop("cells")]
    results = {(row["server"], Cell(**row["cell"]).label): [Result(**r) for r in row["rounds"]] for row in data.pop("rows")}
    return {**data, "cells": cells_, "results": results}, saved["block"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=2, help="seconds of load per cell (perf_analyzer: per measurement window)")
    ap.add_argument("--servers", default="tstriton,pytriton,mlserver")
    ap.add_argument("--cells", default="small,mlp,large", help="groups of cells: small, mlp, large")
    ap.add_argument("--no-write", action="store_true", help="print the block; leave docs/performance.md and the plots as they are")
    ap.add_argument("--from", dest="source", type=Path, help="make the block and plots from a run saved in bench/results/, without measuring")
    args = ap.parse_args()
    args.servers = args.servers.split(",")
    args.cells = args.cells.split(",")
    unknown = [s for s in args.servers if s not in ("tstriton", "pytriton", "mlserver")]
    if unknown or "tstriton" not in args.servers or args.rounds < 1 or args.duration <= 0:
        ap.error(f"--servers must include tstriton and name only tstriton, pytriton, mlserver; got {args.servers}")
    if not (ROOT / "dist" / "bench" / "peers" / "write-block.js").exists():
        ap.error("run `npm run build` first")
    if args.source:
        data, block = load(args.source)
    else:
        started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        load_before = os.getloadavg()[0]
        t0 = time.time()
        data = run(args)
        block = {"title": "Side by side: PyTriton and MLServer", "startedAt": started,
                 "command": "npm run bench:peers" + (" -- " + " ".join(sys.argv[1:]) if sys.argv[1:] else ""),
                 "source": f"bench/peers/run.py, {time.time() - t0:.0f} s", "loads": [load_before, os.getloadavg()[0]],
                 "loadNote": "a server and a load tool add about 2; other work shared the machine when it is higher"}
        print(f"figures saved to {save(data, block).relative_to(ROOT)}", flush=True)
    writer = ["node", str(ROOT / "dist" / "bench" / "peers" / "write-block.js")] + (["--print"] if args.no_write else [])
    subprocess.run(writer, input=json.dumps({**block, "body": report(data)}), text=True, check=True)
    if not args.no_write:
        plots(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
