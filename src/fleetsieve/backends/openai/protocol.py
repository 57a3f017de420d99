"""The client side of the OpenAI-compatible streaming API: request bodies and SSE parsing.

Prompts are sent as token ids on ``/v1/completions`` (vLLM and SGLang accept a list of ints
as ``prompt``), so the prompt length is exact and no tokenizer is needed. Chat requests carry
text built from one-token words, which is only approximately ``prompt_tokens`` long once the
chat template is applied. Output lengths are forced with ``max_tokens`` + ``min_tokens`` +
``ignore_eos``. Random ids per request keep the engine's prefix cache from flattering TTFT.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

Api = Literal["completions", "chat"]
PATHS: dict[str, str] = {"completions": "/v1/completions", "chat": "/v1/chat/completions"}

#: Token ids safe for any tokenizer with a vocabulary of at least 32k (skips special ids).
_ID_RANGE = (1000, 30000)
_decode_json = json.JSONDecoder().decode  # str in, no encoding sniffing per event
#: Short English words that are one token each in common BPE vocabularies.
_WORDS = tuple("the of and to in is it you that he was for on are as with his they at be this".split())


def build_body(api: Api, model: str, prompt_tokens: int, output_tokens: int,
               rng: np.random.Generator, force_output_length: bool = True) -> bytes:
    """The JSON body of one streamed request."""
    return BodyMaker(api, model, rng, force_output_length)(prompt_tokens, output_tokens)


class BodyMaker:
    """Request bodies of one run: a fixed JSON head, random prompt ids drawn in large blocks
    (one numpy call per ``block`` ids instead of one per request)."""

    def __init__(self, api: Api, model: str, rng: np.random.Generator, force_output_length: bool = True,
                 block: int = 1 << 16) -> None:
        self.api, self.rng, self.force, self.block = api, rng, force_output_length, block
        self.id_range = _ID_RANGE if api == "completions" else (0, len(_WORDS))
        fixed = {"model": model, "stream": True, "stream_options": {"include_usage": True}, "temperature": 0.0}
        self.head = json.dumps(fixed, separators=(",", ":"))[:-1]  # without the closing brace
        self._ids = np.empty(0, dtype=np.int64)
        self._at = 0

    def __call__(self, prompt_tokens: int, output_tokens: int) -> bytes:
        n, out = max(1, int(prompt_tokens)), int(output_tokens)
        force = f',"min_tokens":{out},"ignore_eos":true' if self.force else ""
        ids = self._draw(n)
        if self.api == "completions":
            prompt = f'"prompt":{json.dumps(ids)}'
        else:
            prompt = f'"messages":[{{"role":"user","content":"{" ".join(_WORDS[i] for i in ids)}"}}]'
        return f'{self.head},"max_tokens":{out}{force},{prompt}}}'.encode()

    def _draw(self, n: int) -> list[int]:
        """The next ``n`` random ids (one numpy draw refills a block of them)."""
        if self._at + n > len(self._ids):
            self._ids = self.rng.integers(*self.id_range, size=max(self.block, n))
            self._at = 0
        self._at += n
        return self._ids[self._at - n:self._at].tolist()


@dataclass
class StreamParser:
    """Incremental SSE parser: feed it raw bytes, it reports content chunks and the end.

    ``content_chunks`` counts ``data:`` events that carry generated text; ``usage_tokens``
    is the server's ``completion_tokens`` when it sent usage; ``error`` is an in-stream error.
    """

    api: Api
    content_chunks: int = 0
    usage_tokens: int | None = None
    done: bool = False
    error: str | None = None
    _buffer: bytes = field(default=b"", repr=False)

    def feed(self, data: bytes) -> int:
        """Consume bytes; return how many new content chunks they completed."""
        buffer = self._buffer + data if self._buffer else data
        *events, self._buffer = buffer.split(b"\n\n")
        before = self.content_chunks
        for event in events:
            if event.startswith(b"data: ") and b"\n" not in event:  # the usual one-line event
                self._data(event[6:])
                continue
            for line in event.split(b"\n"):
                if line.startswith(b"data:"):
                    self._data(line[5:].strip())
        return self.content_chunks - before

    def _data(self, payload: bytes) -> None:
        if payload == b"[DONE]":
            self.done = True
            return
        try:
            obj = _decode_json(payload.decode())
        except ValueError:
            self.error = f"malformed stream event: {payload[:80]!r}"
            return
        if isinstance(obj, dict) and obj.get("error"):
            self.error = f"server error in stream: {str(obj['error'])[:200]}"
            return
        self._count(obj)

    def _count(self, obj: dict) -> None:
        usage = obj.get("usage")
        if usage and usage.get("completion_tokens") is not None:
            self.usage_tokens = int(usage["completion_tokens"])
        for choice in obj.get("choices") or ():
            text = choice.get("text") if self.api == "completions" else (choice.get("delta") or {}).get("content")
            if text:
                self.content_chunks += 1
                return

    @property
    def output_tokens(self) -> int:
        return self.usage_tokens if self.usage_tokens is not None else self.content_chunks
