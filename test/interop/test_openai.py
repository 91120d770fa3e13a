"""OpenAI-compatible API interop: the official `openai` Python client against the example server
(`dist/examples/serve.js`), which serves the OpenAI API on its HTTP port: `echo_chat` (a decoupled stand-in for
an LLM, bound with a chat template) for chat and completions, `embed_text` for embeddings.
"""
import json
import re
import time
import urllib.error
import urllib.request

import numpy as np
import openai
import pytest
import tritonclient.http as httpclient

from conftest import start_server, stop_server

MESSAGES = [
    {"role": "system", "content": "You are a parrot."},
    {"role": "user", "content": "hello streaming world"},
]


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=f"http://{server.http_url}/v1", api_key="unused", max_retries=0)


def test_models_list_lists_the_bound_models(client):
    ids = [m.id for m in client.models.list()]
    assert {"echo_chat", "embed_text", "stream_tokens", "add_sub"} <= set(ids)
    assert ids == sorted(ids)
    assert client.models.retrieve("echo_chat").owned_by == "tstriton"


def test_chat_completion(client):
    reply = client.chat.completions.create(model="echo_chat", messages=MESSAGES)
    assert reply.object == "chat.completion"
    assert reply.model == "echo_chat"
    assert len(reply.choices) == 1
    assert reply.choices[0].message.role == "assistant"
    assert reply.choices[0].message.content == "You said: hello streaming world"
    assert reply.choices[0].finish_reason == "stop"
    # echo_chat reports one token per word of the templated prompt and of the reply.
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage.total_tokens) == (10, 5, 15)


def test_chat_completion_streams_chunk_by_chunk(client):
    stream = client.chat.completions.create(model="echo_chat", messages=MESSAGES, stream=True,
                                            stream_options={"include_usage": True})
    chunks = list(stream)
    assert all(c.object == "chat.completion.chunk" and c.id == chunks[0].id for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    contents = [ch.delta.content for c in chunks for ch in c.choices if ch.delta.content]
    assert contents == ["You ", "said: ", "hello ", "streaming ", "world"]
    assert [ch.finish_reason for c in chunks for ch in c.choices if ch.finish_reason] == ["stop"]
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens == 15


def test_max_tokens_stops_with_finish_reason_length(client):
    reply = client.chat.completions.create(model="echo_chat", messages=MESSAGES, max_tokens=2)
    assert reply.choices[0].message.content == "You said:"
    assert reply.choices[0].finish_reason == "length"


def test_completion_with_and_without_streaming(client):
    prompt = "<|user|>\nsay it twice\n<|assistant|>\n"
    done = client.completions.create(model="echo_chat", prompt=prompt)
    assert done.object == "text_completion"
    assert done.choices[0].text == "You said: say it twice"
    assert done.choices[0].finish_reason == "stop"

    pieces, finish = [], []
    for chunk in client.completions.create(model="echo_chat", prompt=prompt, stream=True):
        if chunk.choices[0].text:
            pieces.append(chunk.choices[0].text)
        if chunk.choices[0].finish_reason:
            finish.append(chunk.choices[0].finish_reason)
    assert pieces == ["You ", "said: ", "say ", "it ", "twice"]
    assert finish == ["stop"]


@pytest.mark.parametrize("encoding_format", ["float", None])
def test_embeddings_equal_the_kserve_endpoint(client, server, encoding_format):
    texts = ["a cat sat on the mat", "the dog ran", "a cat sat on the mat"]
    kserve = httpclient.InferenceServerClient(server.http_url)
    t = httpclient.InferInput("TEXT", [len(texts), 1], "BYTES")
    t.set_data_from_numpy(np.array([[s.encode()] for s in texts], dtype=np.object_))
    expected = kserve.infer("embed_text", [t]).as_numpy("EMBEDDING")

    # Without encoding_format, the client asks for base64 and decodes it.
    extra = {"encoding_format": encoding_format} if encoding_format else {}
    result = client.embeddings.create(model="embed_text", input=texts, **extra)
    assert result.object == "list"
    assert [d.index for d in result.data] == [0, 1, 2]
    got = np.array([d.embedding for d in result.data], dtype=np.float32)
    assert got.shape == (3, 64)
    np.testing.assert_array_equal(got, expected)


def metric(server, pattern):
    """The value of the first metric line on the metrics port that matches `pattern` (0 when none does)."""
    text = urllib.request.urlopen(f"http://{server.metrics_url}/metrics").read().decode()
    m = re.search(pattern + r" (\d+)", text, re.M)
    return int(m.group(1)) if m else 0


CANCELED = r'^nv_inference_request_failure\{[^}]*model="echo_chat"[^}]*reason="CANCELED"[^}]*\}'
# echo_chat counts the replies it stopped before their last word in this metric of the example's own.
STOPPED = r"^echo_chat_stopped_total"


def test_aborting_a_streaming_chat_stops_the_generator(client, server):
    canceled, stopped = metric(server, CANCELED), metric(server, STOPPED)
    # A reply of 400 words: about 8 s at echo_chat's pace, had nothing stopped it.
    long_message = [{"role": "user", "content": " ".join(f"w{i}" for i in range(400))}]
    stream = client.chat.completions.create(model="echo_chat", messages=long_message, stream=True)
    seen = 0
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            seen += 1
        if seen == 3:
            break
    stream.close()
    # Polled: the server learns of the closed connection a moment after the client closes it. A generator that
    # ran to its last word would not count as stopped at all.
    deadline = time.monotonic() + 30
    while (metric(server, STOPPED) == stopped or metric(server, CANCELED) == canceled) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert metric(server, STOPPED) == stopped + 1
    assert metric(server, CANCELED) == canceled + 1


def test_errors_come_in_openai_shape_as_typed_errors(client, server):
    with pytest.raises(openai.NotFoundError) as unknown:
        client.chat.completions.create(model="no_such_model", messages=MESSAGES)
    assert unknown.value.status_code == 404
    assert unknown.value.code == "model_not_found"

    with pytest.raises(openai.BadRequestError) as missing:
        client.chat.completions.create(model="echo_chat", messages=None)  # sent as null
    assert missing.value.param == "messages"
    assert missing.value.code == "missing_required_parameter"

    with pytest.raises(openai.BadRequestError) as not_text:
        client.completions.create(model="add_sub", prompt="hi")
    assert "text_input" in not_text.value.message

    request = urllib.request.Request(f"http://{server.http_url}/v1/chat/completions", data=b'{"model": "echo_chat",',
                                     method="POST", headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as bad_json:
        urllib.request.urlopen(request)
    assert bad_json.value.code == 400
    error = json.loads(bad_json.value.read())["error"]
    assert sorted(error) == ["code", "message", "param", "type"]
    assert error["type"] == "invalid_request_error"

    # The server goes on.
    assert client.chat.completions.create(model="echo_chat", messages=MESSAGES).choices[0].message.content \
        == "You said: hello streaming world"


def test_api_key_and_own_port():
    """TSTRITON_OPENAI_API_KEY makes every /v1 request need the client's api_key; TSTRITON_OPENAI_PORT adds a port."""
    keyed = start_server(env={"TSTRITON_OPENAI_API_KEY": "sk-interop", "TSTRITON_OPENAI_PORT": "0"})
    try:
        assert keyed.ports["openai"] not in (0, keyed.ports["http"])
        for port in (keyed.ports["http"], keyed.ports["openai"]):
            url = f"http://127.0.0.1:{port}/v1"
            with pytest.raises(openai.AuthenticationError) as refused:
                openai.OpenAI(base_url=url, api_key="sk-wrong", max_retries=0).models.list()
            assert refused.value.code == "invalid_api_key"
            right = openai.OpenAI(base_url=url, api_key="sk-interop", max_retries=0)
            reply = right.chat.completions.create(model="echo_chat", messages=[{"role": "user", "content": "hi"}])
            assert reply.choices[0].message.content == "You said: hi"
    finally:
        assert stop_server(keyed) == 0
