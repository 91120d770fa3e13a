"""Replicas behind haproxy under steady load, and the two scenarios test_scale_out.py asserts on and
bench/scale-out/run.py prints: a rolling restart (SIGTERM, wait for the exit, start again on the same ports, wait
for haproxy to see it up, next) and a SIGKILL of one replica.

haproxy runs deploy/haproxy/haproxy.cfg unchanged, its addresses given through the environment variables the file
reads. The load is CLIENTS HTTP clients and CLIENTS gRPC clients (Triton's asyncio clients), each sending one
`add_sub` request after another, checking the numbers and counting every request that fails; no client retries."""
import asyncio
import csv
import io
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from deploy_support import ROOT, start_server

HAPROXY_CONFIG = ROOT / "deploy" / "haproxy" / "haproxy.cfg"
SERVER_SCRIPT = "dist/examples/add-sub/server.js"
REPLICAS = 3
CLIENTS = 16
MODEL = "add_sub"
HTTP_BACKEND = "tstriton_http"
GRPC_BACKEND = "tstriton_grpc"
PROTOCOLS = ("http", "grpc")


def missing_tools():
    """The tools the scenarios need that are not installed, and what installs them."""
    missing = []
    if shutil.which("haproxy") is None:
        missing.append("haproxy (bash scripts/install-deploy-tools.sh)")
    if not (ROOT / SERVER_SCRIPT).exists():
        missing.append(f"{SERVER_SCRIPT} (npm run build)")
    return missing


def free_ports(count):
    """`count` distinct loopback ports free right now (all bound at once, then released)."""
    socks = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class Replica:
    """One tstriton process on ports of its own, the same ones after every restart."""

    def __init__(self, name, http_port, grpc_port, metrics_port):
        self.name = name
        self.ports = {"http": http_port, "grpc": grpc_port, "metrics": metrics_port}
        self.server = None

    @property
    def http_address(self):
        return f"127.0.0.1:{self.ports['http']}"

    @property
    def grpc_address(self):
        return f"127.0.0.1:{self.ports['grpc']}"

    def start(self, timeout=90):
        self.server = start_server(script=SERVER_SCRIPT, timeout=timeout, env={
            "TSTRITON_HTTP_PORT": str(self.ports["http"]), "TSTRITON_GRPC_PORT": str(self.ports["grpc"]),
            "TSTRITON_METRICS_PORT": str(self.ports["metrics"])})
        bound = {k: self.server.ports[k] for k in self.ports}
        assert bound == self.ports, f"{self.name} bound {bound}, not {self.ports}"

    def terminate(self, timeout=90):
        """SIGTERM, then waits for the exit; returns the exit code."""
        self.server.proc.send_signal(signal.SIGTERM)
        return self.server.proc.wait(timeout)

    def kill(self):
        self.server.proc.kill()
        self.server.proc.wait(30)

    def stop(self):
        if self.server is not None and self.server.proc.poll() is None:
            self.server.proc.kill()
            self.server.proc.wait(30)

    def log_tail(self, lines=20):
        return "".join(self.server.log[-lines:]) if self.server else ""


class Haproxy:
    """haproxy on free ports, running deploy/haproxy/haproxy.cfg in the foreground, read through its admin socket."""

    def __init__(self, replicas, config=HAPROXY_CONFIG):
        self.replicas = replicas
        self.config = config
        self.workdir = tempfile.mkdtemp(prefix="tstriton-lb-")
        self.socket_path = os.path.join(self.workdir, "admin.sock")
        http_port, grpc_port, stats_port = free_ports(3)
        self.http_url = f"127.0.0.1:{http_port}"
        self.grpc_url = f"127.0.0.1:{grpc_port}"
        self.stats_url = f"http://127.0.0.1:{stats_port}/stats"
        self.env = dict(os.environ, TSTRITON_LB_HTTP=self.http_url, TSTRITON_LB_GRPC=self.grpc_url,
                        TSTRITON_LB_STATS=f"127.0.0.1:{stats_port}", TSTRITON_LB_SOCKET=self.socket_path,
                        TSTRITON_LB_NAME=f"tstriton-test-{os.getpid()}-{random.randrange(1 << 30)}")
        for i, r in enumerate(replicas, 1):
            self.env[f"TSTRITON_R{i}_HTTP"] = r.http_address
            self.env[f"TSTRITON_R{i}_GRPC"] = r.grpc_address
        self.proc = None
        self.log_path = os.path.join(self.workdir, "haproxy.log")

    def start(self, timeout=30):
        check = subprocess.run(["haproxy", "-c", "-f", str(self.config)], env=self.env, capture_output=True,
                               text=True)
        assert check.returncode == 0, f"haproxy rejects {self.config}:\n{check.stdout}{check.stderr}"
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(["haproxy", "-f", str(self.config), "-db"], env=self.env, stdout=log,
                                         stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"haproxy exited with {self.proc.returncode}:\n{self.log()}")
            try:
                self.states()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def log(self):
        with open(self.log_path) as f:
            return f.read()

    def command(self, line):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(10)
            s.connect(self.socket_path)
            s.sendall(line.encode() + b"\n")
            chunks = []
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
        return b"".join(chunks).decode()

    def stat_rows(self):
        text = self.command("show stat").lstrip("# ")
        return list(csv.DictReader(io.StringIO(text)))

    def states(self):
        """{(backend, server): status} for the servers of both backends: 'UP', 'DOWN', 'UP 1/2', 'DOWN 1/2', ..."""
        return {(row["pxname"], row["svname"]): row["status"] for row in self.stat_rows()
                if row["pxname"] in (HTTP_BACKEND, GRPC_BACKEND) and row["svname"] not in ("FRONTEND", "BACKEND")}

    def retries(self):
        """{backend: (retries, redispatches)} so far: requests haproxy sent again, and those it sent elsewhere."""
        return {row["pxname"]: (int(row["wretr"] or 0), int(row["wredis"] or 0)) for row in self.stat_rows()
                if row["pxname"] in (HTTP_BACKEND, GRPC_BACKEND) and row["svname"] == "BACKEND"}

    def wait_for(self, servers, status, timeout, poll=0.01):
        """Waits until every server named (in both backends) has exactly `status`; returns the seconds waited."""
        start = time.monotonic()
        while True:
            states = self.states()
            if all(states[(b, s)] == status for s in servers for b in (HTTP_BACKEND, GRPC_BACKEND)):
                return time.monotonic() - start
            if time.monotonic() - start > timeout:
                raise TimeoutError(f"haproxy never saw {servers} {status}: {states}")
            time.sleep(poll)

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        shutil.rmtree(self.workdir, ignore_errors=True)


class Cluster:
    """REPLICAS replicas behind one haproxy, all up."""

    def __init__(self, config=HAPROXY_CONFIG):
        ports = free_ports(3 * REPLICAS)
        self.replicas = [Replica(f"r{i + 1}", *ports[3 * i:3 * i + 3]) for i in range(REPLICAS)]
        self.lb = Haproxy(self.replicas, config)

    def start(self, timeout=90):
        try:
            threads = [threading.Thread(target=r.start) for r in self.replicas]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            for r in self.replicas:
                if r.server is None:
                    raise RuntimeError(f"replica {r.name} did not start")
            self.lb.start()
            self.lb.wait_for([r.name for r in self.replicas], "UP", timeout)
        except BaseException:
            self.stop()
            raise

    def stop(self):
        self.lb.stop()
        for r in self.replicas:
            r.stop()


@dataclass
class Outcome:
    """What the clients of one protocol saw: requests that succeeded, and (end time, error) of each one that failed."""
    ok: int = 0
    failures: list = field(default_factory=list)

    @property
    def total(self):
        return self.ok + len(self.failures)


class Load:
    """CLIENTS HTTP and CLIENTS gRPC clients sending `add_sub` back to back through the balancer, on an event loop
    of their own in a thread. Records, per protocol, each request's start and end times and its error (None if the
    answer came with the right numbers)."""

    def __init__(self, lb, clients=CLIENTS):
        self.lb = lb
        self.clients = clients
        self.records = {p: [] for p in PROTOCOLS}
        self._stop = threading.Event()
        self._thread = None
        self._crash = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def start(self):
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 60
        while not all(any(e is None for _, _, e in self.records[p]) for p in PROTOCOLS):
            if self._crash or not self._thread.is_alive():
                raise RuntimeError(f"load stopped: {self._crash}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"no request succeeded: {self.outcome()}")
            time.sleep(0.05)

    def stop(self):
        self._stop.set()
        self._thread.join(120)
        if self._crash:
            raise RuntimeError(f"load crashed: {self._crash}")

    def _run(self):
        try:
            asyncio.run(self._main())
        except BaseException as e:  # noqa: BLE001 - reported by stop()
            self._crash = repr(e)

    async def _main(self):
        workers = [self._worker("http", i) for i in range(self.clients)]
        workers += [self._worker("grpc", i) for i in range(self.clients)]
        await asyncio.gather(*workers)

    async def _worker(self, protocol, index):
        if protocol == "http":
            import tritonclient.http.aio as client_module
            client = client_module.InferenceServerClient(self.lb.http_url, conn_limit=1, conn_timeout=60.0)
        else:
            import tritonclient.grpc.aio as client_module
            # No retries of its own: grpc-core's transparent retries are off too.
            client = client_module.InferenceServerClient(self.lb.grpc_url, channel_args=[("grpc.enable_retries", 0)])
        rng = np.random.default_rng(index + (1000 if protocol == "grpc" else 0))
        records = self.records[protocol]
        try:
            while not self._stop.is_set():
                a = rng.uniform(-100, 100, size=(1, 16)).astype(np.float32)
                b = rng.uniform(-100, 100, size=(1, 16)).astype(np.float32)
                inputs = [client_module.InferInput(name, [1, 16], "FP32") for name in ("a", "b")]
                inputs[0].set_data_from_numpy(a)
                inputs[1].set_data_from_numpy(b)
                started = time.monotonic()
                try:
                    if protocol == "http":
                        result = await client.infer(MODEL, inputs)
                    else:
                        result = await client.infer(MODEL, inputs, client_timeout=60)
                    if np.array_equal(result.as_numpy("add"), a + b) and np.array_equal(result.as_numpy("sub"), a - b):
                        error = None
                    else:
                        error = "wrong numbers"
                except Exception as e:  # noqa: BLE001 - every failure counts, whatever it is
                    error = f"{type(e).__name__}: {e}"
                records.append((started, time.monotonic(), error))
        finally:
            await client.close()

    def outcome(self, protocol=None):
        if protocol is None:
            return {p: self.outcome(p) for p in PROTOCOLS}
        out = Outcome()
        for _, ended, error in list(self.records[protocol]):
            if error is None:
                out.ok += 1
            else:
                out.failures.append((ended, error))
        return out


def rolling_restart(cluster, settle=0.5):
    """Under load: each replica in turn gets SIGTERM, exits, starts again on the same ports, and is seen UP by
    haproxy before the next one. Returns {"http": Outcome, "grpc": Outcome, "exit_codes": [...], "seconds": ...}."""
    lb = cluster.lb
    exit_codes = []
    before = lb.retries()
    started = time.monotonic()
    with Load(lb) as load:
        time.sleep(settle)
        for r in cluster.replicas:
            exit_codes.append(r.terminate())
            r.start()
            lb.wait_for([r.name], "UP", 90)
            time.sleep(settle)
    result = load.outcome()
    result.update(exit_codes=exit_codes, seconds=time.monotonic() - started, resent=resent(before, lb.retries()))
    return result


def sigkill(cluster, victim=1, settle=1.0, watch=3.0):
    """Under load: SIGKILL one replica, time how long until haproxy shows it DOWN in both backends, keep the load on
    for `watch` seconds after the kill, then start the replica again and wait until it is UP. Returns per protocol
    the Outcome of the whole run, the failures of requests that started after haproxy showed it DOWN, and the
    time from the kill to the end of the last failed request; plus "down_after" (seconds)."""
    lb = cluster.lb
    replica = cluster.replicas[victim]
    before = lb.retries()
    with Load(lb) as load:
        time.sleep(settle)
        killed = time.monotonic()
        replica.kill()
        down_after = lb.wait_for([replica.name], "DOWN", 30)
        down_at = killed + down_after
        time.sleep(max(0.0, killed + watch - time.monotonic()))
        replica.start()
        lb.wait_for([replica.name], "UP", 90)
        time.sleep(settle)
    result = {"down_after": down_after, "resent": resent(before, lb.retries())}
    for p in PROTOCOLS:
        outcome = load.outcome(p)
        late = [(s, e, err) for s, e, err in load.records[p] if err is not None and s > down_at]
        last = max((e for e, _ in outcome.failures), default=None)
        result[p] = outcome
        result[p + "_after_down"] = late
        result[p + "_failing_for"] = 0.0 if last is None else max(0.0, last - killed)
    return result


def resent(before, after):
    """{protocol: (retries, redispatches)} between two Haproxy.retries() readings."""
    return {p: tuple(a - b for a, b in zip(after[f"tstriton_{p}"], before[f"tstriton_{p}"])) for p in PROTOCOLS}


def summary(result, protocol):
    """'N requests, N failed (haproxy: N retries, N redispatches)' for one protocol of a scenario's result."""
    outcome = result[protocol]
    retries, redispatches = result["resent"][protocol]
    return (f"{outcome.total} requests, {len(outcome.failures)} failed (haproxy: {retries} retries, "
            f"{redispatches} redispatches)")


def describe_failures(outcome, limit=5):
    counts = {}
    for _, error in outcome.failures:
        counts[error] = counts.get(error, 0) + 1
    return "; ".join(f"{n}x {e}" for e, n in sorted(counts.items(), key=lambda kv: -kv[1])[:limit])
