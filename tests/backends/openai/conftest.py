"""Loopback servers for the live-backend tests: serve-sim (fixed engine) and a fault server."""

from __future__ import annotations

import asyncio
import socket

import pytest
from aiohttp import web

from fleetsieve.serve_sim import FixedStepEngine, ServerThread, create_app


@pytest.fixture
def sim_server():
    """serve-sim with a 2 ms fixed step, real time, on 127.0.0.1 (random port)."""
    with ServerThread(create_app(FixedStepEngine(step_s=0.002), model="m")) as server:
        yield server


def _chunk(text: str) -> bytes:
    return b'data: {"choices":[{"index":0,"text":"' + text.encode() + b'"}]}\n\n'


async def _status(request: web.Request) -> web.Response:
    code = int(request.match_info["code"])
    return web.json_response({"error": {"message": f"injected {code}"}}, status=code)


async def _cut(request: web.Request) -> web.StreamResponse:
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    await resp.write(_chunk("a") + _chunk("b"))
    await asyncio.sleep(0.01)
    request.transport.close()  # drop the connection mid-stream, without a final chunk
    return resp


async def _early_done(request: web.Request) -> web.StreamResponse:
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    await resp.write(_chunk("a"))
    await resp.write_eof()  # clean close, but no [DONE]
    return resp


async def _hang(request: web.Request) -> web.StreamResponse:
    await asyncio.sleep(30)
    return web.Response(status=200)


def fault_app() -> web.Application:
    app = web.Application()
    app.router.add_post("/status/{code}/v1/completions", _status)
    app.router.add_post("/cut/v1/completions", _cut)
    app.router.add_post("/nodone/v1/completions", _early_done)
    app.router.add_post("/hang/v1/completions", _hang)
    return app


@pytest.fixture
def fault_server():
    """A loopback server whose paths inject one fault each (see ``fault_app``)."""
    with ServerThread(fault_app()) as server:
        yield server


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
