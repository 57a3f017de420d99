"""The OpenAI-compatible HTTP layer of serve-sim (aiohttp.web).

Routes: ``POST /v1/completions``, ``POST /v1/chat/completions`` (streamed as server-sent
events in OpenAI's chunk format, or as one JSON body), ``GET /v1/models``, ``GET /health``.
Prompt length: a token-id list counts exactly; text counts one token per whitespace-separated
word (an approximation; serve-sim has no tokenizer). Output length is always ``max_tokens``:
a simulated engine never meets an end-of-sequence token, which matches ``ignore_eos``.

*Fast mode* (the fixed engine on a virtual clock, ``time_scale == 0``): a request's timing
means nothing there, so the engine driver is bypassed and each response, the whole SSE
stream included, is written at once (one write, ``Content-Length`` instead of chunked
encoding). It exists to benchmark clients, which still parse every event.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from fleetsieve.serve_sim.engines import EngineDriver, FixedStepEngine

DEFAULT_MAX_TOKENS = 16
_TOKEN_TEXT = " t"
_SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
_DRIVER_KEY = web.AppKey("driver", EngineDriver)
_MODEL_KEY = web.AppKey("model", str)
_FAST_KEY = web.AppKey("fast", bool)
#: Response ids: unique per process (pid) and per response (counter); cheaper than uuid4.
_RESPONSE_IDS = itertools.count()


class BadRequest(Exception):
    """A request the server rejects; carries the HTTP status and an OpenAI-style message."""

    def __init__(self, status: int, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.param = status, message, param


def _error(status: int, message: str, param: str | None = None) -> web.Response:
    kind = "NotFoundError" if status == 404 else "BadRequestError"
    body = {"error": {"message": message, "type": kind, "param": param, "code": status}}
    return web.json_response(body, status=status)


def _count_text(text: Any) -> int:
    if isinstance(text, str):
        return len(text.split())
    if isinstance(text, list):  # chat content parts
        return sum(_count_text(p.get("text", "")) for p in text if isinstance(p, dict))
    return 0


def _prompt_tokens(body: dict, chat: bool) -> int:
    if chat:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise BadRequest(400, "'messages' must be a non-empty list", "messages")
        return max(1, sum(_count_text(m.get("content")) for m in messages if isinstance(m, dict)))
    prompt = body.get("prompt")
    if isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt):
        return len(prompt)
    if isinstance(prompt, str):
        return max(1, _count_text(prompt))
    raise BadRequest(400, "'prompt' must be a string or a non-empty list of token ids", "prompt")


@dataclass
class ParsedRequest:
    """The parts of a completion request serve-sim uses."""

    prompt_tokens: int
    output_tokens: int
    stream: bool
    include_usage: bool


def parse_request(body: Any, model: str, chat: bool) -> ParsedRequest:
    """Validate a request body; raises BadRequest with the status OpenAI servers use."""
    if not isinstance(body, dict):
        raise BadRequest(400, "request body must be a JSON object")
    if body.get("model") != model:
        raise BadRequest(404, f"The model `{body.get('model')}` does not exist.", "model")
    if body.get("n", 1) != 1:
        raise BadRequest(400, "only n=1 is supported", "n")
    max_tokens = body.get("max_tokens", body.get("max_completion_tokens", DEFAULT_MAX_TOKENS))
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise BadRequest(400, "'max_tokens' must be a positive integer", "max_tokens")
    options = body.get("stream_options") or {}
    return ParsedRequest(_prompt_tokens(body, chat), max_tokens, bool(body.get("stream", False)),
                         bool(options.get("include_usage", False)))


@dataclass
class _Progress:
    """Tokens reported by the engine and not yet written to the client."""

    pending: int = 0
    produced: int = 0
    finished: bool = False
    event: asyncio.Event = field(default_factory=asyncio.Event)

    def __call__(self, tokens: int, finished: bool) -> None:
        self.pending += tokens
        self.produced += tokens
        self.finished = self.finished or finished
        self.event.set()

    async def take(self) -> int:
        await self.event.wait()
        self.event.clear()
        count, self.pending = self.pending, 0
        return count


class _Chunks:
    """Pre-encoded SSE events for one request (every token chunk is identical)."""

    def __init__(self, model: str, chat: bool) -> None:
        self.chat = chat
        self.head = {"id": f"{'chatcmpl' if chat else 'cmpl'}-{os.getpid():x}-{next(_RESPONSE_IDS):x}",
                     "object": "chat.completion.chunk" if chat else "text_completion",
                     "created": int(time.time()), "model": model}
        self.token = self.event(self.choice({"content": _TOKEN_TEXT}, None))
        self.last = self.event(self.choice({"content": _TOKEN_TEXT}, "length"))

    def choice(self, delta: dict, finish: str | None) -> dict:
        if self.chat:
            return {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {"index": 0, "text": delta.get("content", ""), "logprobs": None, "finish_reason": finish}

    def event(self, choice: dict | None, usage: dict | None = None) -> bytes:
        obj = {**self.head, "choices": [choice] if choice else []}
        if usage is not None:
            obj["usage"] = usage
        return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


def _usage(prompt: int, output: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": output, "total_tokens": prompt + output}


async def _stream(request: web.Request, parsed: ParsedRequest, progress: _Progress, chunks: _Chunks) -> web.StreamResponse:
    resp = web.StreamResponse(headers=_SSE_HEADERS)
    await resp.prepare(request)
    if chunks.chat:
        await resp.write(chunks.event(chunks.choice({"role": "assistant", "content": ""}, None)))
    while not progress.finished or progress.pending:
        count = await progress.take()
        if progress.finished and count:
            await resp.write(chunks.token * (count - 1) + chunks.last)
        elif count:
            await resp.write(chunks.token * count)
    if parsed.include_usage:
        await resp.write(chunks.event(None, _usage(parsed.prompt_tokens, progress.produced)))
    await resp.write(b"data: [DONE]\n\n")
    await resp.write_eof()
    return resp


def _whole(parsed: ParsedRequest, produced: int, chunks: _Chunks) -> web.Response:
    text = _TOKEN_TEXT * produced
    if chunks.chat:
        choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "length"}
    else:
        choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": "length"}
    obj = {**chunks.head, "object": "chat.completion" if chunks.chat else "text_completion",
           "choices": [choice], "usage": _usage(parsed.prompt_tokens, produced)}
    return web.json_response(obj)


def _at_once(parsed: ParsedRequest, chunks: _Chunks) -> web.Response:
    """Fast mode: the whole response in one write (the SSE stream as one body)."""
    if not parsed.stream:
        return _whole(parsed, parsed.output_tokens, chunks)
    parts = [chunks.event(chunks.choice({"role": "assistant", "content": ""}, None))] if chunks.chat else []
    parts += [chunks.token * (parsed.output_tokens - 1), chunks.last]
    if parsed.include_usage:
        parts.append(chunks.event(None, _usage(parsed.prompt_tokens, parsed.output_tokens)))
    parts.append(b"data: [DONE]\n\n")
    return web.Response(body=b"".join(parts), headers=_SSE_HEADERS)


async def _complete(request: web.Request, chat: bool) -> web.StreamResponse:
    model, driver = request.app[_MODEL_KEY], request.app[_DRIVER_KEY]
    try:
        parsed = parse_request(await request.json(), model, chat)
    except json.JSONDecodeError:
        return _error(400, "request body is not valid JSON")
    except BadRequest as bad:
        return _error(bad.status, bad.message, bad.param)
    if request.app[_FAST_KEY]:
        return _at_once(parsed, _Chunks(model, chat))
    progress, chunks = _Progress(), _Chunks(model, chat)
    rid = driver.submit(parsed.prompt_tokens, parsed.output_tokens, progress)
    try:
        if parsed.stream:
            return await _stream(request, parsed, progress, chunks)
        while not progress.finished:
            await progress.take()
        return _whole(parsed, progress.produced, chunks)
    except ConnectionResetError:
        driver.forget(rid)  # the client went away; the engine finishes the request unobserved
        return web.Response(status=499)  # never sent: the connection is gone
    except asyncio.CancelledError:
        driver.forget(rid)
        raise


async def _completions(request: web.Request) -> web.StreamResponse:
    return await _complete(request, chat=False)


async def _chat(request: web.Request) -> web.StreamResponse:
    return await _complete(request, chat=True)


async def _models(request: web.Request) -> web.Response:
    model = request.app[_MODEL_KEY]
    entry = {"id": model, "object": "model", "created": 0, "owned_by": "fleetsieve-serve-sim"}
    return web.json_response({"object": "list", "data": [entry]})


async def _health(request: web.Request) -> web.Response:
    return web.Response(status=200)


def is_fast_mode(engine: Any, time_scale: float) -> bool:
    """Fast mode: the fixed engine on a virtual clock (see the module docstring)."""
    return isinstance(engine, FixedStepEngine) and time_scale <= 0


def create_app(engine: Any, *, model: str, time_scale: float = 1.0) -> web.Application:
    """The serve-sim application around one engine (the driver starts with the app)."""
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app[_MODEL_KEY] = model
    app[_FAST_KEY] = is_fast_mode(engine, time_scale)
    app[_DRIVER_KEY] = EngineDriver(engine, time_scale)

    async def on_startup(app: web.Application) -> None:
        app[_DRIVER_KEY].start()

    async def on_cleanup(app: web.Application) -> None:
        await app[_DRIVER_KEY].close()

    app.on_startup.append(on_startup)
    app.on_cleanup.append(on_cleanup)
    app.router.add_post("/v1/completions", _completions)
    app.router.add_post("/v1/chat/completions", _chat)
    app.router.add_get("/v1/models", _models)
    app.router.add_get("/health", _health)
    return app
