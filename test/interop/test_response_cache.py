"""Response cache interop: the real `tritonclient` (HTTP and gRPC) against `embed_text`, which the example
server (`dist/examples/serve.js`) binds with `response_cache { enable: true }` on a 16 MiB cache.

A repeated request is answered from the cache: the same outputs, `cache_hit` in the statistics, and no
new execution; the per-model cache metrics count it on the metrics port.
"""
import uuid
import urllib.request

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient


def counts(stats):
    """(cache hits, cache misses, executions) from one model's statistics, as JSON."""
    s = stats["model_stats"][0]
    inference = s["inference_stats"]
    return (int(inference["cache_hit"].get("count", 0)), int(inference["cache_miss"].get("count", 0)),
            int(s.get("execution_count", 0)))


def text_input(module, text):
    t = module.InferInput("TEXT", [1, 1], "BYTES")
    t.set_data_from_numpy(np.array([[text.encode()]], dtype=np.object_))
    return t


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_a_repeated_request_is_answered_from_the_cache(server, protocol):
    if protocol == "http":
        module, client = httpclient, httpclient.InferenceServerClient(server.http_url)
        stats = lambda: counts(client.get_inference_statistics("embed_text"))
    else:
        module, client = grpcclient, grpcclient.InferenceServerClient(server.grpc_url)
        stats = lambda: counts(client.get_inference_statistics("embed_text", as_json=True))
    config = client.get_model_config("embed_text")
    config = config if protocol == "http" else config.config
    enabled = config["response_cache"]["enable"] if protocol == "http" else config.response_cache.enable
    assert enabled is True

    text = f"the quick brown fox {uuid.uuid4()}"  # unique: no earlier test stored it
    before = stats()
    first = client.infer("embed_text", [text_input(module, text)]).as_numpy("EMBEDDING")
    after_first = stats()
    second = client.infer("embed_text", [text_input(module, text)]).as_numpy("EMBEDDING")
    after_second = stats()

    assert first.shape == (1, 64) and first.dtype == np.float32
    assert np.isclose(np.linalg.norm(first), 1.0, atol=1e-5)
    np.testing.assert_array_equal(second, first)
    assert after_first == (before[0], before[1] + 1, before[2] + 1)  # a miss, one execution
    assert after_second == (after_first[0] + 1, after_first[1], after_first[2])  # a hit, no execution

    other = client.infer("embed_text", [text_input(module, text + " jumps")]).as_numpy("EMBEDDING")
    assert not np.array_equal(other, first)
    assert stats()[1] == after_second[1] + 1


def test_cache_metrics_on_the_metrics_port(server):
    client = httpclient.InferenceServerClient(server.http_url)
    text = f"lazy dog {uuid.uuid4()}"
    for _ in range(3):
        client.infer("embed_text", [text_input(httpclient, text)])
    hits, misses, _ = counts(client.get_inference_statistics("embed_text"))
    body = urllib.request.urlopen(f"http://{server.metrics_url}/metrics").read().decode()

    def sample(name):
        line = next(l for l in body.splitlines() if l.startswith(name + "{") and 'model="embed_text"' in l)
        return float(line.rsplit(" ", 1)[1])

    assert sample("nv_cache_num_hits_per_model") == hits >= 2
    assert sample("nv_cache_num_misses_per_model") == misses >= 1
    assert any(l.startswith("nv_cache_num_entries ") for l in body.splitlines())
