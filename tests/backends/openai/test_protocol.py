import json

import numpy as np

from fleetsieve.backends.openai.protocol import StreamParser, build_body


def test_completion_body_has_exact_token_ids_and_forced_length():
    body = json.loads(build_body("completions", "m", 37, 12, np.random.default_rng(0)))
    assert len(body["prompt"]) == 37 and all(isinstance(t, int) for t in body["prompt"])
    assert body["max_tokens"] == body["min_tokens"] == 12 and body["ignore_eos"] is True
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


def test_prompts_differ_between_requests_so_prefix_caching_cannot_help():
    rng = np.random.default_rng(0)
    a, b = (json.loads(build_body("completions", "m", 50, 5, rng))["prompt"] for _ in range(2))
    assert a != b


def test_chat_body_and_unforced_length():
    body = json.loads(build_body("chat", "m", 20, 5, np.random.default_rng(0), force_output_length=False))
    assert len(body["messages"][0]["content"].split()) == 20
    assert "ignore_eos" not in body and "min_tokens" not in body


def event(obj) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def test_parser_handles_events_split_across_reads():
    raw = (event({"choices": [{"text": "a"}]}) + event({"choices": [{"text": ""}]}) +
           event({"choices": [{"text": "b"}]}) + event({"choices": [], "usage": {"completion_tokens": 5}}) +
           b"data: [DONE]\n\n")
    parser = StreamParser("completions")
    counts = [parser.feed(raw[i:i + 7]) for i in range(0, len(raw), 7)]
    assert sum(counts) == 2 and parser.done
    assert parser.output_tokens == 5  # usage wins over the chunk count


def test_parser_chat_ignores_role_only_chunk_and_reports_errors():
    parser = StreamParser("chat")
    parser.feed(event({"choices": [{"delta": {"role": "assistant", "content": ""}}]}))
    parser.feed(event({"choices": [{"delta": {"content": "x"}}]}))
    assert parser.content_chunks == 1 and parser.output_tokens == 1
    parser.feed(event({"error": {"message": "boom"}}))
    assert "boom" in parser.error
    bad = StreamParser("completions")
    bad.feed(b"data: {not json\n\n")
    assert bad.error.startswith("malformed")


def test_body_maker_refills_its_id_block_and_keeps_bodies_distinct():
    from fleetsieve.backends.openai.protocol import BodyMaker

    make = BodyMaker("completions", "m", np.random.default_rng(1), block=8)
    bodies = [json.loads(make(5, 3)) for _ in range(6)] + [json.loads(make(20, 3))]  # 20 > block
    assert [len(b["prompt"]) for b in bodies] == [5] * 6 + [20]
    assert len({tuple(b["prompt"]) for b in bodies}) == 7
    assert all(1000 <= t < 30000 for b in bodies for t in b["prompt"])
    again = BodyMaker("completions", "m", np.random.default_rng(1), block=8)
    assert json.loads(again(5, 3)) == bodies[0]  # same seed, same requests


def test_parser_reads_multi_line_events_and_comments():
    parser = StreamParser("completions")
    raw = b': keep-alive comment\n\nevent: message\ndata: {"choices":[{"text":"x"}]}\n\ndata:[DONE]\n\n'
    assert parser.feed(raw) == 1 and parser.done
