"""Starts the example server (`dist/examples/serve.js`) on free ports for the interop tests."""
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# `npm test` runs this suite twice (scripts/test-all.sh): once with the servers' defaults (one front-end thread on a
# machine of two cores), then with TSTRITON_HTTP_THREAD_COUNT=2 in its environment, which every server started here
# inherits (start_server passes the environment on; an `env` of a test's own still wins), so that Triton's clients
# also meet the hand-off between front-end threads and the core that most production requests take.
_THREADS = os.environ.get("TSTRITON_HTTP_THREAD_COUNT", "")
FRONT_END_THREADS = int(_THREADS) if _THREADS.isdigit() and int(_THREADS) > 1 else 0
"""The front-end thread count the servers run with when the environment sets one above 1 (the threaded pass), else 0."""


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "runs_once(reason): the test runs in the first pass only, not again with front-end threads; "
                   "the reason says why (it starts no server, sets its own thread count, or cannot run on threads)")


def pytest_report_header(config):
    return [f"front-end threads: {FRONT_END_THREADS} (TSTRITON_HTTP_THREAD_COUNT)" if FRONT_END_THREADS
            else "front-end threads: the servers' default"]


INTEROP_TEST_SECONDS = int(os.environ.get("TSTRITON_INTEROP_TEST_SECONDS", "300"))
"""How long one interop test may run (pytest-timeout, where installed): a call that hangs fails its own test, and the
suite goes on, rather than the whole run reaching its deadline without a report."""


def pytest_collection_modifyitems(config, items):
    if config.pluginmanager.hasplugin("timeout"):
        here = Path(__file__).resolve().parent
        for item in items:
            if here in Path(str(item.path)).resolve().parents and item.get_closest_marker("timeout") is None:
                item.add_marker(pytest.mark.timeout(INTEROP_TEST_SECONDS))
    if not FRONT_END_THREADS:
        return
    for item in items:
        marker = item.get_closest_marker("runs_once")
        if marker is not None:
            why = marker.kwargs.get("reason") or (marker.args[0] if marker.args else "")
            if not why:
                raise pytest.UsageError(f"{item.nodeid}: runs_once needs a reason")
            item.add_marker(pytest.mark.skip(reason=f"runs in the first pass only: {why}"))


# In the threaded pass every test's name ends in [front-end-threads-N] (junit xml, -q summary, failures), so that a
# failure says which pass it came from; the first pass keeps the names it always had.
@pytest.fixture(scope="session", autouse=True)
def front_end_threads(request):
    return getattr(request, "param", None)


def pytest_generate_tests(metafunc):
    if FRONT_END_THREADS and "front_end_threads" in metafunc.fixturenames:
        metafunc.parametrize("front_end_threads", [FRONT_END_THREADS], ids=[f"front-end-threads-{FRONT_END_THREADS}"],
                             indirect=True, scope="session")


class RunningServer:
    """A tstriton process and the ports it bound."""

    def __init__(self, proc, ports, log):
        self.proc = proc
        self.ports = ports
        self.log = log

    @property
    def http_url(self):
        return f"127.0.0.1:{self.ports['http']}"

    @property
    def grpc_url(self):
        return f"127.0.0.1:{self.ports['grpc']}"

    @property
    def metrics_url(self):
        return f"127.0.0.1:{self.ports['metrics']}"


def start_server(script="dist/examples/serve.js", env=None, timeout=30, command=None, cwd=ROOT):
    """Starts a server script (or `command`, run in `cwd`) with every port at 0 and waits for its 'serving'
    log line."""
    full_env = dict(os.environ)
    full_env.update({"TSTRITON_HTTP_PORT": "0", "TSTRITON_GRPC_PORT": "0", "TSTRITON_METRICS_PORT": "0",
                     "TSTRITON_HTTP_ADDRESS": "127.0.0.1", "TSTRITON_GRPC_ADDRESS": "127.0.0.1",
                     "TSTRITON_METRICS_ADDRESS": "127.0.0.1"})
    full_env.update(env or {})
    # A process group of its own: a wrapper (npx) passes no signal on to the server it starts, so stop_server
    # signals the whole group.
    proc = subprocess.Popen(command or ["node", str(ROOT / script)], cwd=cwd, env=full_env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    log = []
    found = threading.Event()
    holder = {}

    def pump():
        for line in proc.stdout:
            log.append(line)
            if not found.is_set():
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if record.get("msg") == "front-end threads listening":
                    holder["threads"] = record.get("threads")
                if record.get("msg") == "serving":
                    holder["ports"] = record["ports"]
                    found.set()

    threading.Thread(target=pump, daemon=True).start()
    if not found.wait(timeout):
        proc.kill()
        raise RuntimeError("server did not start:\n" + "".join(log))
    # The threaded pass proves nothing if the server quietly serves on its core thread (Node before 22.12, a platform
    # without reusePort): such a server fails the test that started it, with its log.
    if FRONT_END_THREADS and full_env.get("TSTRITON_HTTP_THREAD_COUNT") == str(FRONT_END_THREADS) \
            and holder.get("threads") != FRONT_END_THREADS:
        stop_server(RunningServer(proc, holder["ports"], log))
        raise RuntimeError(f"the threaded pass asked for {FRONT_END_THREADS} front-end threads and the server did not "
                           "log 'front-end threads listening' with that many:\n" + "".join(log))
    return RunningServer(proc, holder["ports"], log)


def stop_server(server, timeout=30):
    """SIGTERM to the server's process group; waits for every process in it (SIGKILL after `timeout` seconds).
    Returns the exit code of the process started."""
    group = server.proc.pid
    if server.proc.poll() is None or _group_alive(group):
        _signal_group(group, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while (server.proc.poll() is None or _group_alive(group)) and time.monotonic() < deadline:
            time.sleep(0.05)
        if server.proc.poll() is None or _group_alive(group):
            _signal_group(group, signal.SIGKILL)
            server.proc.wait()
    return server.proc.returncode


def _signal_group(group, sig):
    try:
        os.killpg(group, sig)
    except ProcessLookupError:
        pass


def _group_alive(group):
    try:
        os.killpg(group, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


@pytest.fixture(scope="session")
def server():
    running = start_server()
    yield running
    stop_server(running)
