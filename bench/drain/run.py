#!/usr/bin/env python3
"""SIGTERM under keep-alive HTTP/1.1 clients, run many times: counts the resets, the EOFs without an answer and the
lost answers of each run, on one front-end thread and on several (docs/deploy.md "Stopping" has the table).

Each run starts test/fixtures/drain/server.js (a 50 ms model, max_batch_size 16) in a process of its own with
TSTRITON_HTTP_THREAD_COUNT set, runs 16 clients as Python's http.client does it (one keep-alive connection each,
posting infer in a loop; http.client opens a new connection when an answer says `Connection: close`), sends SIGTERM
once every client has had 3 answers, and lets each client run until the closed port refuses its connection.

    python3 bench/drain/run.py [--runs 20] [--threads 1,2] [--clients 16] [--delay-ms 50] [--max-batch-size 16]

Node is node_modules/.bin/node (Node 24, `npm ci` first); the fixture runs from the TypeScript sources.

What each request gets is one of: 200 with the right numbers; 503 with Triton's JSON and `Connection: close`; a
reset (ECONNRESET, EPIPE: the server closed, or exited, with the request unread); an EOF without an answer
(http.client's RemoteDisconnected, or a body cut short); anything else (a wrong answer, another status, a 503
without `Connection: close`, no answer within 30 s). `lost` is every request without a 200 or such a 503. A
connection the closed port refuses sends no request and ends the client. The exit code is 1 unless every run had
0 resets, 0 EOFs and 0 lost answers and the server exited 0.
"""
import argparse
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NODE = ROOT / "node_modules" / ".bin" / "node"
FIXTURE = ROOT / "test" / "fixtures" / "drain" / "server.js"
REGISTER_TS = ROOT / "lib" / "instances" / "worker" / "register-ts.js"

PATH = "/v2/models/double/infer"
BODY = json.dumps({"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 3], "data": [1, 2, 3]}]})
HEADERS = {"Content-Type": "application/json"}
STOPPING = {"error": "Server is stopping and accepts no new requests"}
#: Answers every client must have had before the signal, so that it lands under full load.
WARM = 3
#: The longest a client waits for one answer before it counts the request as lost.
ANSWER_TIMEOUT_S = 30
#: Requests one client sends at most: a run ends even if the server never stops.
MAX_REQUESTS = 20_000


class Tally:
    """What the clients of one run saw, counted under a lock (16 threads add to it)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.counts = {"requests": 0, "ok": 0, "refused_503": 0, "refused_connect": 0, "reset": 0, "eof": 0, "other": 0}
        self.notes = []
        self.first_503 = None
        self.failures_at = []

    def add(self, outcome, note=None, at=None):
        with self.lock:
            self.counts[outcome] += 1
            if note is not None and len(self.notes) < 10:
                self.notes.append(note)
            if outcome == "refused_503" and self.first_503 is None:
                self.first_503 = at
            if outcome in ("reset", "eof", "other") and at is not None:
                self.failures_at.append(at)


def client(port, tally, warm):
    """One http.client connection posting infer in a loop until the port refuses a connection."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=ANSWER_TIMEOUT_S)
    answers = 0
    for _ in range(MAX_REQUESTS):
        # http.client opens a connection when it has none: the first time, and after an answer said Connection: close.
        where = "a new connection" if conn.sock is None else "a kept-alive connection"
        try:
            if conn.sock is None:
                conn.connect()
        except ConnectionRefusedError:
            tally.add("refused_connect")
            return
        except ConnectionResetError as err:
            # Accepted by the kernel, then reset before the request went out (http.client sets TCP_NODELAY on it).
            tally.add("reset", f"{err!r} as the connection opened", time.monotonic())
            conn.close()
            continue
        except OSError as err:
            tally.add("other", f"connect: {err!r}", time.monotonic())
            return
        tally.add("requests")
        try:
            conn.request("POST", PATH, body=BODY, headers=HEADERS)
            res = conn.getresponse()
            body = res.read()
        except (http.client.RemoteDisconnected, http.client.IncompleteRead) as err:
            # Before ConnectionResetError, a base of RemoteDisconnected: an orderly close, without the whole answer.
            tally.add("eof", f"{err!r} on {where}", time.monotonic())
            conn.close()
            continue
        except (ConnectionResetError, BrokenPipeError) as err:
            tally.add("reset", f"{err!r} on {where}", time.monotonic())
            conn.close()
            continue
        except (OSError, http.client.HTTPException) as err:
            tally.add("other", f"{err!r} on {where}", time.monotonic())
            conn.close()
            continue
        outcome = classify(res, body)
        tally.add(outcome, None if outcome != "other" else f"HTTP {res.status} Connection: "
                  f"{res.getheader('Connection')} {body[:200]!r}", time.monotonic())
        answers += 1
        if answers == WARM:
            warm.release()
    tally.add("other", f"still served after {MAX_REQUESTS} requests")


def classify(res, body):
    """'ok' for a 200 with the right numbers, 'refused_503' for a stopping server's 503, 'other' for anything else."""
    try:
        answer = json.loads(body)
    except ValueError:
        return "other"
    if res.status == 200 and answer.get("outputs", [{}])[0].get("data") == [2, 4, 6]:
        return "ok"
    if res.status == 503 and (res.getheader("Connection") or "").lower() == "close" and answer == STOPPING:
        return "refused_503"
    return "other"


def start_server(threads, delay_ms, max_batch_size):
    env = {**os.environ, "TSTRITON_HTTP_THREAD_COUNT": str(threads)}
    command = [str(NODE), "--require", str(REGISTER_TS), str(FIXTURE), str(delay_ms), str(max_batch_size)]
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    if not line:
        proc.wait()
        raise RuntimeError(f"the server exited with {proc.returncode} before serving")
    return proc, json.loads(line)["http"]


def front_end_threads(pid):
    """How many front-end threads (named tstriton-fe-<n>) the server runs: 0 means the ports are on its main thread."""
    count = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                count += f.read().startswith("tstriton-f")
        except OSError:
            pass
    return count


def run_once(threads, clients, delay_ms, max_batch_size):
    proc, port = start_server(threads, delay_ms, max_batch_size)
    try:
        fe = front_end_threads(proc.pid)
        tally = Tally()
        warm = threading.Semaphore(0)
        workers = [threading.Thread(target=client, args=(port, tally, warm), daemon=True) for _ in range(clients)]
        for w in workers:
            w.start()
        for _ in workers:
            if not warm.acquire(timeout=60):
                raise RuntimeError(f"the clients did not get {WARM} answers each within 60 s: {tally.counts}, "
                                   f"{tally.notes}")
        at_signal = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        for w in workers:
            w.join(ANSWER_TIMEOUT_S + 5)
        code = proc.wait(60)
        exited = time.monotonic() - at_signal
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    c = tally.counts
    lost = c["requests"] - c["ok"] - c["refused_503"]
    since = lambda t: None if t is None else round((t - at_signal) * 1000)  # noqa: E731
    return {
        "threads": threads, "front_end_threads": fe, "exit_code": code, "exit_ms": round(exited * 1000), **c,
        "lost": lost, "first_503_ms": since(tally.first_503),
        "failures_ms": sorted(since(t) for t in tally.failures_at), "notes": tally.notes,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="runs per thread count (default 20)")
    parser.add_argument("--threads", default="1,2",
                        help="TSTRITON_HTTP_THREAD_COUNT values, comma-separated (default 1,2)")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--delay-ms", type=int, default=50, help="the model's time per batch (default 50)")
    parser.add_argument("--max-batch-size", type=int, default=16)
    args = parser.parse_args()
    if not NODE.exists():
        sys.exit(f"needs {NODE}: run `npm ci` first")

    results = []
    for threads in [int(t) for t in args.threads.split(",")]:
        for run in range(1, args.runs + 1):
            r = run_once(threads, args.clients, args.delay_ms, args.max_batch_size)
            r["run"] = run
            results.append(r)
            print(json.dumps(r), file=sys.stderr, flush=True)

    print("| threads | run | requests | 200 | 503 | refused connections | resets | EOF without answer | lost answers "
          "| exit code | first 503 / exit after SIGTERM |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in results:
        print(f"| {r['threads']} | {r['run']} | {r['requests']} | {r['ok']} | {r['refused_503']} | "
              f"{r['refused_connect']} | {r['reset']} | {r['eof']} | {r['lost']} | {r['exit_code']} | "
              f"{r['first_503_ms']} ms / {r['exit_ms']} ms |")
    print()
    print("| threads | runs | runs with a reset | resets | EOFs without answer | lost answers | exit codes |")
    print("|---:|---:|---:|---:|---:|---:|---|")
    bad = False
    for threads in sorted({r["threads"] for r in results}):
        rs = [r for r in results if r["threads"] == threads]
        codes = sorted({r["exit_code"] for r in rs})
        resets = sum(r["reset"] for r in rs)
        eofs = sum(r["eof"] for r in rs)
        lost = sum(r["lost"] for r in rs)
        with_reset = sum(1 for r in rs if r["reset"])
        print(f"| {threads} | {len(rs)} | {with_reset} | {resets} | {eofs} | {lost} | {', '.join(map(str, codes))} |")
        bad = bad or resets or eofs or lost or codes != [0]
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
