"""Decoupled streaming with Triton's own clients: tritonclient.grpc streams and `curl -N` on the generate
extension against the example server's `stream_tokens` (one response per word of PROMPT, ~20 ms apart), and
a slow reader of a long stream, over HTTP SSE and gRPC, keeping the server's memory bounded.

The memory tests need a model that streams as fast as the server can send: `stream_tokens` waits on a timer
before every word, and a 0 ms timer still takes at least 1 ms in Node, so 200k words would take over 200 s
even with STREAM_TOKEN_DELAY_MS=0. They start a second server (FAST_SERVER_JS) that binds the same model
without the wait. Once `stream_tokens` skips the wait at 0 ms, `start_server(env={"STREAM_TOKEN_DELAY_MS":
"0"})` can replace it.
"""
import json
import os
import queue
import shutil
import socket
import subprocess
import threading
import time

import numpy as np
import pytest
import tritonclient.grpc as grpcclient

from conftest import ROOT, start_server, stop_server

PROMPT = "the quick brown fox jumps over the lazy dog"


def prompt_input(prompt):
    inp = grpcclient.InferInput("PROMPT", [1], "BYTES")
    inp.set_data_from_numpy(np.array([prompt.encode()], dtype=np.object_))
    return [inp]


def token(result):
    return result.as_numpy("TOKEN")[0].decode()


def is_final(result):
    return result.get_response().parameters["triton_final_response"].bool_param


@pytest.fixture
def stream(server):
    """A gRPC client with its stream started; `stream.results` gets every (result, error) the callback sees."""
    client = grpcclient.InferenceServerClient(server.grpc_url)
    client.results = queue.Queue()
    client.start_stream(callback=lambda result, error: client.results.put((result, error)))
    yield client
    client.stop_stream()
    client.close()


# ---- tritonclient.grpc -----------------------------------------------------------------------------

def test_grpc_stream_sends_every_token_in_order_then_an_empty_final_response(stream):
    stream.async_stream_infer("stream_tokens", prompt_input(PROMPT), request_id="t1", enable_empty_final_response=True)
    tokens = []
    for _ in range(len(PROMPT.split()) + 1):
        result, error = stream.results.get(timeout=30)
        assert error is None, error
        assert result.get_response().id == "t1"
        if is_final(result):
            break
        tokens.append(token(result))
    assert tokens == PROMPT.split()
    final = result.get_response()
    assert is_final(result) and len(final.outputs) == 0 and result.as_numpy("TOKEN") is None
    assert (final.model_name, final.model_version) == ("stream_tokens", "1")


def test_grpc_stream_without_the_flag_sends_every_token_and_no_final_response(server):
    client = grpcclient.InferenceServerClient(server.grpc_url)
    results = queue.Queue()
    client.start_stream(callback=lambda result, error: results.put((result, error)))
    try:
        client.async_stream_infer("stream_tokens", prompt_input(PROMPT), request_id="t2")
        got = [results.get(timeout=30) for _ in PROMPT.split()]
    finally:
        # Half-closes and waits until the server has ended the call: every response has arrived by then.
        client.stop_stream()
        client.close()
    assert all(error is None for _, error in got), got
    assert [token(r) for r, _ in got] == PROMPT.split()
    assert not any(is_final(r) for r, _ in got)
    assert results.empty()


def test_grpc_stream_error_reaches_the_callback_and_the_stream_stays_open(stream):
    stream.async_stream_infer("missing_model", prompt_input("x"), request_id="bad")
    result, error = stream.results.get(timeout=30)
    assert result is None
    assert "unknown model: 'missing_model'" in error.message()
    # The same stream serves the next request, and two requests interleave matched by id.
    stream.async_stream_infer("stream_tokens", prompt_input("a b c d"), request_id="one", enable_empty_final_response=True)
    stream.async_stream_infer("stream_tokens", prompt_input("e f g"), request_id="two", enable_empty_final_response=True)
    tokens, finals = {"one": [], "two": []}, set()
    while len(finals) < 2:
        result, error = stream.results.get(timeout=30)
        assert error is None, error
        rid = result.get_response().id
        if is_final(result):
            finals.add(rid)
        else:
            tokens[rid].append(token(result))
    assert tokens == {"one": ["a", "b", "c", "d"], "two": ["e", "f", "g"]}


# ---- curl -N on the generate extension -------------------------------------------------------------

def test_curl_shows_one_sse_event_per_token_as_it_is_produced(server):
    curl = shutil.which("curl")
    assert curl, "curl is not on PATH (apt-get install -y curl)"
    words = [f"w{i}" for i in range(100)]  # ~2 s of streaming
    url = f"http://{server.http_url}/v2/models/stream_tokens/generate_stream"
    proc = subprocess.Popen([curl, "-sS", "-N", "-i", "--max-time", "30", "-X", "POST", "-d", json.dumps({"PROMPT": " ".join(words), "id": "c1"}), url],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        head = []
        for line in proc.stdout:
            if not line.strip():
                break
            head.append(line.strip().lower())
        assert head[0].startswith("http/1.1 200"), head
        assert "content-type: text/event-stream; charset=utf-8" in head, head
        first = proc.stdout.readline()
        # -N prints each event as the server writes it: the first arrives while the stream is still running.
        assert proc.poll() is None, "curl finished before the first event was read: the events were not streamed"
        rest = proc.stdout.read()  # not communicate(): it would skip what the text wrapper has buffered
        err = proc.stderr.read()
        assert proc.wait(timeout=30) == 0, err
    finally:
        proc.kill()
    body = first + rest
    assert body.endswith("\n\n") and all(e.startswith("data: ") for e in body[:-2].split("\n\n"))
    events = [json.loads(e[len("data: "):]) for e in body[:-2].split("\n\n")]
    assert events == [{"id": "c1", "model_name": "stream_tokens", "model_version": "1", "TOKEN": w} for w in words]


# ---- a slow reader of a long stream --------------------------------------------------------------

FAST_SERVER_JS = """
'use strict';
const { Triton, tensor } = require(%(root)s + '/dist/lib');
const { sample } = require(%(root)s + '/dist/decorators');
const triton = new Triton();
triton.bind({
  modelName: 'stream_tokens',
  inferFunc: sample(async function* (inputs, request) {
    const prompt = Buffer.from(inputs.PROMPT.data[0]).toString('utf8');
    for (const word of prompt.split(/\\s+/).filter(Boolean)) {
      if (request.signal.aborted) return;
      yield { TOKEN: tensor('BYTES', [1], [word]) };
    }
  }),
  inputs: [{ name: 'PROMPT', dtype: 'BYTES', shape: [1] }],
  outputs: [{ name: 'TOKEN', dtype: 'BYTES', shape: [1] }],
  config: { batching: false, decoupled: true },
});
triton.serve().then((code) => process.exit(code));
"""

TOKENS = 200_000
WORDS = [f"{i:08d}" for i in range(TOKENS)]  # a 1.8 MB prompt, 16.6 MB of SSE events
SLOW_SECONDS = 4
# Server RSS growth while the reader is slow, measured on a 2-core machine: with back-pressure ~39 MiB over
# HTTP and ~18 MiB over gRPC (mostly parsing the prompt into 200k words); for a server that buffers what its
# reader has not taken (writes not waiting for 'drain'), ~130 MiB over HTTP and ~97 MiB over gRPC. At 100k
# tokens that buffering cost only ~55 MiB over gRPC, too close to the noise for a bound to tell them apart.
RSS_GROWTH_BOUND = 64 * 2**20
# With front-end threads (the threaded pass) each thread is a V8 heap of its own, whose young generation grows under
# the request's first burst whatever the reader does: there the slow phase is held to the fast phase's growth (what
# the same request costs a reader that keeps up) plus the same margin, which a buffering server (~130 MiB over HTTP
# while the reader is slow) still exceeds.
def slow_growth_bound(sampler):
    if not os.environ.get("TSTRITON_HTTP_THREAD_COUNT", "").isdigit() or int(os.environ["TSTRITON_HTTP_THREAD_COUNT"]) < 2:
        return RSS_GROWTH_BOUND
    return max(RSS_GROWTH_BOUND, sampler.growth("fast") + RSS_GROWTH_BOUND // 2)


@pytest.fixture(scope="module")
def fast_server(tmp_path_factory):
    script = tmp_path_factory.mktemp("servers") / "fast-stream-tokens.js"
    script.write_text(FAST_SERVER_JS % {"root": json.dumps(str(ROOT))})
    running = start_server(str(script))
    yield running
    stop_server(running)


def rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


class RssSampler:
    """Samples a process's RSS every 10 ms on a thread. `phase(name)` starts a phase; the first phase's start
    is the baseline, and `growth(name)` is the highest RSS seen in a phase above it."""

    def __init__(self, pid):
        self.pid, self.current, self.baseline, self.peaks = pid, None, None, {}
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stopped.wait(0.01):
            if self.current:
                self.peaks[self.current] = max(self.peaks.get(self.current, 0), rss(self.pid))

    def phase(self, name):
        if self.baseline is None:
            self.baseline = rss(self.pid)
        self.current = name

    def stop(self):
        self.stopped.set()
        self.thread.join()

    def growth(self, name):
        return max(self.peaks.get(name, 0) - self.baseline, 0)


def report(capsys, what, sampler, read_slowly):
    with capsys.disabled():
        print(f"\n{what}: RSS before the request {sampler.baseline / 2**20:.1f} MiB; growth while read slowly "
              f"{sampler.growth('slow') / 2**20:.1f} MiB ({read_slowly} read in {SLOW_SECONDS} s), "
              f"while read fast {sampler.growth('fast') / 2**20:.1f} MiB")


def warm_up(server):
    client = grpcclient.InferenceServerClient(server.grpc_url)
    client.start_stream(callback=lambda result, error: None)
    client.async_stream_infer("stream_tokens", prompt_input(" ".join(WORDS[:2000])))
    client.stop_stream()
    client.close()


def test_slow_sse_reader_keeps_server_memory_bounded_and_then_gets_every_token(fast_server, capsys):
    warm_up(fast_server)
    host, port = fast_server.http_url.split(":")
    body = json.dumps({"PROMPT": " ".join(WORDS)}).encode()
    # HTTP/1.0: the answer is not chunked and ends when the connection closes.
    request = (f"POST /v2/models/stream_tokens/generate_stream HTTP/1.0\r\nHost: {host}\r\n"
               f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((host, int(port)))
    sampler = RssSampler(fast_server.proc.pid)
    try:
        # From before the request: a server that runs ahead of its reader has written everything by the time
        # the first bytes arrive. Parsing the prompt into words counts too.
        sampler.phase("slow")
        sock.sendall(request)
        chunks = [sock.recv(256)]
        end = time.monotonic() + SLOW_SECONDS
        while time.monotonic() < end:
            chunks.append(sock.recv(256))
            time.sleep(0.01)
        read_slowly = sum(map(len, chunks))
        sampler.phase("fast")
        while chunk := sock.recv(1 << 16):
            chunks.append(chunk)
    finally:
        sampler.stop()
        sock.close()
    report(capsys, "HTTP SSE", sampler, f"{read_slowly / 1e3:.0f} kB")

    head, _, events = b"".join(chunks).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") or head.startswith(b"HTTP/1.0 200"), head
    tokens = [json.loads(e[len(b"data: "):])["TOKEN"] for e in events.split(b"\n\n") if e]
    assert tokens == WORDS
    assert read_slowly < len(events) / 10, "the slow phase was not slow"
    assert sampler.growth("slow") < slow_growth_bound(sampler), f"server RSS grew {sampler.growth('slow') / 2**20:.1f} MiB"


def test_slow_grpc_reader_keeps_server_memory_bounded_and_then_gets_every_token(fast_server, capsys):
    warm_up(fast_server)
    sampler = RssSampler(fast_server.proc.pid)
    tokens, errors = [], []
    started, done = threading.Event(), threading.Event()
    slow_until = []

    def callback(result, error):
        if error is not None:
            errors.append(error)
            done.set()
        elif is_final(result):
            done.set()
        else:
            if not tokens:
                slow_until.append(time.monotonic() + SLOW_SECONDS)
                started.set()
            tokens.append(token(result))
            # The callback runs on the stream's reader thread: while it sleeps, nothing is read from the call.
            if time.monotonic() < slow_until[0]:
                time.sleep(0.01)

    client = grpcclient.InferenceServerClient(fast_server.grpc_url)
    client.start_stream(callback=callback)
    try:
        sampler.phase("slow")
        client.async_stream_infer("stream_tokens", prompt_input(" ".join(WORDS)), enable_empty_final_response=True)
        assert started.wait(30), errors
        time.sleep(max(0.0, slow_until[0] - time.monotonic()))
        read_slowly = len(tokens)
        sampler.phase("fast")
        # Sized for a busy 2-core machine: with both cores kept busy by other work, 200,000 responses over one
        # stream took close to a minute.
        assert done.wait(240), f"{len(tokens)} of {TOKENS} tokens arrived"
    finally:
        sampler.stop()
        client.stop_stream()
        client.close()
    report(capsys, "gRPC", sampler, f"{read_slowly} tokens")
    assert not errors, errors
    assert tokens == WORDS
    assert read_slowly < TOKENS / 10, "the slow phase was not slow"
    assert sampler.growth("slow") < slow_growth_bound(sampler), f"server RSS grew {sampler.growth('slow') / 2**20:.1f} MiB"
