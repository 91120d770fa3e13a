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
                if record.get("msg") == "serving":
                    holder["ports"] = record["ports"]
                    found.set()

    threading.Thread(target=pump, daemon=True).start()
    if not found.wait(timeout):
        proc.kill()
        raise RuntimeError("server did not start:\n" + "".join(log))
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
