"""System shared memory interop: the real `tritonclient` (HTTP and gRPC, with `tritonclient.utils.shared_memory`
creating the POSIX regions) and perf_analyzer `--shared-memory system` against the example server started with
`TSTRITON_ALLOW_SHARED_MEMORY=true`. The session server (default settings) shows the extension is off by default.

Model: `add_sub` (a, b FP32 [-1] -> add = a + b, sub = a - b), max_batch_size 64.
"""
import os
import re
import shutil
import subprocess
import uuid

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
import tritonclient.utils.shared_memory as shm
from tritonclient.utils import InferenceServerException

from conftest import start_server, stop_server

N = 16
BYTES = N * 4


@pytest.fixture(scope="module")
def shm_server():
    running = start_server(env={"TSTRITON_ALLOW_SHARED_MEMORY": "true"})
    yield running
    stop_server(running)


@pytest.fixture()
def regions():
    """Four fresh regions (a, b, add, sub) with unique keys; destroyed after the test."""
    tag = uuid.uuid4().hex[:8]
    made = {name: (f"{name}_{tag}", f"/tstriton_{name}_{tag}") for name in ("a", "b", "add", "sub")}
    handles = {name: shm.create_shared_memory_region(region, key, BYTES) for name, (region, key) in made.items()}
    yield made, handles
    for h in handles.values():
        shm.destroy_shared_memory_region(h)


def client_for(protocol, server):
    if protocol == "http":
        return httpclient, httpclient.InferenceServerClient(server.http_url)
    return grpcclient, grpcclient.InferenceServerClient(server.grpc_url)


def through_regions(module, made):
    """add_sub's inputs read from the regions of `made` (a, b) and its outputs written to them (add, sub)."""
    inputs = [module.InferInput("a", [1, N], "FP32"), module.InferInput("b", [1, N], "FP32")]
    outputs = [module.InferRequestedOutput("add"), module.InferRequestedOutput("sub")]
    for tensor, name in zip(inputs + outputs, ("a", "b", "add", "sub")):
        tensor.set_shared_memory(made[name][0], BYTES)
    return inputs, outputs


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_inputs_and_outputs_through_shared_memory(shm_server, regions, protocol):
    module, client = client_for(protocol, shm_server)
    made, handles = regions
    a = np.arange(N, dtype=np.float32)[None]
    b = np.full((1, N), 0.5, dtype=np.float32)
    shm.set_shared_memory_region(handles["a"], [a])
    shm.set_shared_memory_region(handles["b"], [b])
    for region, key in made.values():
        client.register_system_shared_memory(region, key, BYTES)
    try:
        status = client.get_system_shared_memory_status()
        names = [r["name"] for r in status] if protocol == "http" else list(status.regions)
        assert {region for region, _ in made.values()} <= set(names)

        inputs, outputs = through_regions(module, made)
        result = client.infer("add_sub", inputs, outputs=outputs)

        out = result.get_output("add")
        shape = out["shape"] if protocol == "http" else list(out.shape)
        assert [int(d) for d in shape] == [1, N]
        # The data went to shared memory, not into the response.
        if protocol == "http":
            assert "data" not in out and "parameters" not in out
        else:
            response = result.get_response()
            assert all(raw == b"" for raw in response.raw_output_contents)
        np.testing.assert_array_equal(shm.get_contents_as_numpy(handles["add"], np.float32, [1, N]), a + b)
        np.testing.assert_array_equal(shm.get_contents_as_numpy(handles["sub"], np.float32, [1, N]), a - b)

        # Mixed: one output to shared memory, the other in the response.
        plain = module.InferRequestedOutput("sub", binary_data=True) if protocol == "http" else module.InferRequestedOutput("sub")
        shm.set_shared_memory_region(handles["b"], [np.full((1, N), 2.0, dtype=np.float32)])
        result = client.infer("add_sub", inputs, outputs=[outputs[0], plain])
        np.testing.assert_array_equal(result.as_numpy("sub"), a - 2.0)
        np.testing.assert_array_equal(shm.get_contents_as_numpy(handles["add"], np.float32, [1, N]), a + 2.0)

        # An output window too small for the result fails the request and names both sizes.
        small = module.InferRequestedOutput("add")
        small.set_shared_memory(made["add"][0], BYTES // 2)
        with pytest.raises(InferenceServerException, match=rf"output 'add' \({BYTES // 2} bytes\) should be at least {BYTES} bytes"):
            client.infer("add_sub", inputs, outputs=[small])

        # An input window beyond the region, and an unknown region.
        wide = module.InferInput("a", [1, 2 * N], "FP32")
        wide.set_shared_memory(made["a"][0], 2 * BYTES)
        with pytest.raises(InferenceServerException, match="beyond the"):
            client.infer("add_sub", [wide, inputs[1]])
        ghost = module.InferInput("a", [1, N], "FP32")
        ghost.set_shared_memory("ghost", BYTES)
        with pytest.raises(InferenceServerException, match="Unable to find system shared memory region: 'ghost'"):
            client.infer("add_sub", [ghost, inputs[1]])
    finally:
        for region, _ in made.values():
            client.unregister_system_shared_memory(region)
    status = client.get_system_shared_memory_status()
    names = [r["name"] for r in status] if protocol == "http" else list(status.regions)
    assert not {region for region, _ in made.values()} & set(names)


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_regions_destroyed_and_created_again_under_the_same_names(shm_server, protocol):
    """tritonclient's cycle, three times with the same region names and keys: create the objects, register them,
    infer, unregister, destroy. Each time the server reads the new objects and writes into the new ones, on every
    front-end thread (the threaded pass runs this on two), never through an object destroyed before."""
    module, client = client_for(protocol, shm_server)
    tag = uuid.uuid4().hex[:8]
    made = {name: (f"again_{name}_{tag}", f"/tstriton_again_{name}_{tag}") for name in ("a", "b", "add", "sub")}
    b = np.full((1, N), 0.5, dtype=np.float32)
    for round_ in range(1, 4):
        handles = {name: shm.create_shared_memory_region(region, key, BYTES) for name, (region, key) in made.items()}
        try:
            a = np.arange(N, dtype=np.float32)[None] * round_
            shm.set_shared_memory_region(handles["a"], [a])
            shm.set_shared_memory_region(handles["b"], [b])
            for region, key in made.values():
                client.register_system_shared_memory(region, key, BYTES)
            inputs, outputs = through_regions(module, made)
            # Several calls, each on a connection of its own, so that they land on every thread.
            for _ in range(4):
                _, fresh = client_for(protocol, shm_server)
                try:
                    fresh.infer("add_sub", inputs, outputs=outputs)
                finally:
                    fresh.close()
                np.testing.assert_array_equal(shm.get_contents_as_numpy(handles["add"], np.float32, [1, N]), a + b)
                np.testing.assert_array_equal(shm.get_contents_as_numpy(handles["sub"], np.float32, [1, N]), a - b)
        finally:
            for region, _ in made.values():
                client.unregister_system_shared_memory(region)
            for h in handles.values():
                shm.destroy_shared_memory_region(h)
    client.close()


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_register_errors(shm_server, regions, protocol):
    _, client = client_for(protocol, shm_server)
    made, _ = regions
    region, key = made["a"]
    with pytest.raises(InferenceServerException, match=f"Unable to open shared memory region: '/tstriton_missing_{protocol}'"):
        client.register_system_shared_memory("missing", f"/tstriton_missing_{protocol}", BYTES)
    client.register_system_shared_memory(region, key, BYTES)
    try:
        with pytest.raises(InferenceServerException, match=f"shared memory region '{region}' already in manager"):
            client.register_system_shared_memory(region, key, BYTES)
        with pytest.raises(InferenceServerException, match="beyond the end"):
            client.register_system_shared_memory(region + "_big", key, 2 * BYTES)
    finally:
        client.unregister_system_shared_memory(region)
    # CUDA shared memory cannot be registered here, but status and unregister answer.
    client.unregister_cuda_shared_memory()
    status = client.get_cuda_shared_memory_status()
    assert (status == []) if protocol == "http" else (len(status.regions) == 0)


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_register_refuses_a_symbolic_link(shm_server, tmp_path, protocol):
    """A key whose /dev/shm entry links to another file is refused, as glibc's shm_open refuses it (ELOOP): the
    file it points to is neither read into an inference nor overwritten by an output."""
    module, client = client_for(protocol, shm_server)
    target = tmp_path / "secret"
    original = np.arange(N, dtype=np.float32).tobytes()
    target.write_bytes(original)
    key = f"/tstriton_link_{protocol}_{uuid.uuid4().hex[:8]}"
    link = "/dev/shm" + key
    region = f"link_{protocol}"
    os.symlink(target, link)
    try:
        with pytest.raises(InferenceServerException) as info:
            client.register_system_shared_memory(region, key, BYTES)
        assert f"Unable to open shared memory region: '{key}' is a symbolic link" in info.value.message()
        assert info.value.status() == ("400" if protocol == "http" else "StatusCode.INVALID_ARGUMENT")
        status = client.get_system_shared_memory_status()
        names = [r["name"] for r in status] if protocol == "http" else list(status.regions)
        assert region not in names

        # An inference that names the region finds none: nothing is read from, or written to, the target.
        a = module.InferInput("a", [1, N], "FP32")
        a.set_shared_memory(region, BYTES)
        b = module.InferInput("b", [1, N], "FP32")
        b.set_data_from_numpy(np.ones((1, N), dtype=np.float32))
        add = module.InferRequestedOutput("add")
        add.set_shared_memory(region, BYTES)
        with pytest.raises(InferenceServerException, match=f"Unable to find system shared memory region: '{region}'"):
            client.infer("add_sub", [a, b], outputs=[add])
        assert target.read_bytes() == original
    finally:
        os.unlink(link)


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_off_by_default(server, protocol):
    _, client = client_for(protocol, server)
    meta = client.get_server_metadata()
    extensions = meta["extensions"] if protocol == "http" else list(meta.extensions)
    assert "system_shared_memory" not in extensions
    with pytest.raises(InferenceServerException, match="Client shared memory is disabled"):
        client.register_system_shared_memory("r", "/tstriton_anything", BYTES)


def test_extension_advertised_when_allowed(shm_server):
    meta = httpclient.InferenceServerClient(shm_server.http_url).get_server_metadata()
    assert "system_shared_memory" in meta["extensions"]
    assert "cuda_shared_memory" not in meta["extensions"]


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_perf_analyzer_shared_memory(shm_server, protocol):
    exe = shutil.which("perf_analyzer")
    assert exe, "perf_analyzer is not on PATH (scripts/install-test-tools.sh installs it)"
    url = shm_server.http_url if protocol == "http" else shm_server.grpc_url
    cmd = [exe, "-m", "add_sub", "-u", url, "-i", protocol, "--shape", "a:16", "--shape", "b:16", "--shared-memory", "system",
           "--output-shared-memory-size", "1024", "--concurrency-range", "1:2:1", "--measurement-interval", "250",
           "--stability-percentage", "200", "--max-trials", "15"]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    out = proc.stdout
    assert proc.returncode == 0, out
    bad = [line for line in out.splitlines() if re.search(r"error|fail|unable", line, re.IGNORECASE)]
    assert not bad, out
    counts = [int(n) for n in re.findall(r"^\s+Request count: (\d+)$", out, re.MULTILINE)]
    assert len(counts) == 2 and all(n > 0 for n in counts), out
    # perf_analyzer unregisters its regions at exit.
    assert httpclient.InferenceServerClient(shm_server.http_url).get_system_shared_memory_status() == []
