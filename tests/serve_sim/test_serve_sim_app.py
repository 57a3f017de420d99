"""serve-sim over real loopback HTTP, checked with httpx and the official openai client."""

import httpx
import openai
import pytest

from fleetsieve.serve_sim import BadRequest, FixedStepEngine, ServerThread, create_app, parse_request


@pytest.fixture(scope="module")
def server():
    with ServerThread(create_app(FixedStepEngine(step_s=0.001), model="sim-model")) as s:
        yield s


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=10)


def test_health_and_models(server):
    assert httpx.get(server.url + "/health").status_code == 200
    models = httpx.get(server.url + "/v1/models").json()
    assert [m["id"] for m in models["data"]] == ["sim-model"]


def test_openai_client_streams_a_completion_with_token_id_prompt(client):
    stream = client.completions.create(model="sim-model", prompt=list(range(100, 140)), max_tokens=7, stream=True,
                                       stream_options={"include_usage": True}, extra_body={"ignore_eos": True})
    chunks = list(stream)
    texts = [c.choices[0].text for c in chunks if c.choices]
    assert len(texts) == 7 and all(texts)
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "length"
    usage = chunks[-1].usage
    assert (usage.prompt_tokens, usage.completion_tokens) == (40, 7)


def test_openai_client_streams_a_chat_completion(client):
    stream = client.chat.completions.create(model="sim-model", messages=[{"role": "user", "content": "one two three"}],
                                            max_tokens=4, stream=True)
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert sum(1 for c in chunks if c.choices and c.choices[0].delta.content) == 4


def test_non_streamed_completion(client):
    resp = client.completions.create(model="sim-model", prompt="a b c d", max_tokens=3)
    assert resp.usage.completion_tokens == 3 and resp.usage.prompt_tokens == 4
    assert resp.choices[0].text == " t t t"


def test_unknown_model_is_404_and_bad_input_is_400(client):
    with pytest.raises(openai.NotFoundError):
        client.completions.create(model="other", prompt="x", max_tokens=2)
    with pytest.raises(openai.BadRequestError):
        client.completions.create(model="sim-model", prompt="x", max_tokens=0)


def test_parse_request_rules():
    parsed = parse_request({"model": "m", "prompt": [1, 2, 3], "max_tokens": 5, "stream": True}, "m", chat=False)
    assert (parsed.prompt_tokens, parsed.output_tokens, parsed.stream, parsed.include_usage) == (3, 5, True, False)
    with pytest.raises(BadRequest, match="prompt"):
        parse_request({"model": "m", "prompt": []}, "m", chat=False)
    with pytest.raises(BadRequest, match="messages"):
        parse_request({"model": "m"}, "m", chat=True)
    with pytest.raises(BadRequest, match="n=1"):
        parse_request({"model": "m", "prompt": "x", "n": 2}, "m", chat=False)


def test_invalid_json_is_400(server):
    r = httpx.post(server.url + "/v1/completions", content=b"{nope", headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and "JSON" in r.json()["error"]["message"]


@pytest.fixture(scope="module")
def fast_client():
    from fleetsieve.serve_sim import FixedStepEngine, is_fast_mode

    engine = FixedStepEngine(step_s=0.001)
    assert is_fast_mode(engine, 0.0) and not is_fast_mode(engine, 1.0)
    with ServerThread(create_app(engine, model="sim-model", time_scale=0.0)) as s:
        yield openai.OpenAI(base_url=s.url + "/v1", api_key="unused", max_retries=0, timeout=10), s.url


def test_fast_mode_streams_are_openai_compatible_and_written_at_once(fast_client):
    client, url = fast_client
    stream = client.completions.create(model="sim-model", prompt=[1, 2, 3], max_tokens=6, stream=True,
                                       stream_options={"include_usage": True})
    chunks = list(stream)
    assert sum(1 for c in chunks if c.choices and c.choices[0].text) == 6
    assert chunks[-1].usage.completion_tokens == 6
    chat = list(client.chat.completions.create(model="sim-model", messages=[{"role": "user", "content": "a b"}],
                                               max_tokens=3, stream=True))
    assert chat[0].choices[0].delta.role == "assistant"
    assert sum(1 for c in chat if c.choices and c.choices[0].delta.content) == 3
    raw = httpx.post(url + "/v1/completions", json={"model": "sim-model", "prompt": "x", "max_tokens": 2, "stream": True})
    assert raw.headers["content-type"] == "text/event-stream" and raw.headers["content-length"] == str(len(raw.content))
    assert raw.content.endswith(b"data: [DONE]\n\n")


def test_fast_mode_plain_completion_and_errors(fast_client):
    client, _ = fast_client
    assert client.completions.create(model="sim-model", prompt="a b", max_tokens=3).choices[0].text == " t t t"
    with pytest.raises(openai.NotFoundError):
        client.completions.create(model="other", prompt="x", max_tokens=2, stream=True)
