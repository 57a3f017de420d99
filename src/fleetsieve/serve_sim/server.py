"""Running a serve-sim app: in the foreground (the CLI), as several worker processes sharing
one port (``SO_REUSEPORT``: the kernel spreads connections over them), or on a background
thread (tests)."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass
from typing import Callable

from aiohttp import web

DEFAULT_HOST = "127.0.0.1"  # loopback only unless the user asks for more
READY_PREFIX = "serve-sim listening on "


async def _start(app: web.Application, host: str, port: int, shutdown_s: float = 5.0,
                 reuse_port: bool = False) -> tuple[web.AppRunner, str]:
    # shutdown_s bounds how long stopping waits for streams still open
    runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=shutdown_s)
    await runner.setup()
    site = web.TCPSite(runner, host, port, backlog=4096, reuse_port=reuse_port or None)
    await site.start()
    bound = runner.addresses[0][1]
    return runner, f"http://{host}:{bound}"


async def serve_until_signalled(app: web.Application, host: str = DEFAULT_HOST, port: int = 8000,
                                on_ready: Callable[[str], None] | None = None, reuse_port: bool = False) -> None:
    """Serve until SIGINT/SIGTERM. When listening, calls ``on_ready(url)``; by default that
    prints one ``serve-sim listening on URL`` line."""
    runner, url = await _start(app, host, port, reuse_port=reuse_port)
    (on_ready or _announce)(url)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    orphan_watch = loop.create_task(_stop_when_orphaned(stop)) if reuse_port else None
    try:
        await stop.wait()
    finally:
        if orphan_watch is not None:
            orphan_watch.cancel()
        await runner.cleanup()
        if on_ready is None:
            print("serve-sim stopped", file=sys.stderr, flush=True)


def _announce(url: str) -> None:
    print(READY_PREFIX + url, flush=True)


async def _stop_when_orphaned(stop: asyncio.Event) -> None:
    """A worker outlives no parent (a SIGKILLed supervisor cannot stop it otherwise)."""
    parent = os.getppid()
    while os.getppid() == parent:
        await asyncio.sleep(0.5)
    stop.set()


def _reserve_port(host: str, port: int) -> socket.socket:
    """A bound, not listening, SO_REUSEPORT socket: fixes the port (0 = a free one) while
    the workers bind it too, and receives no connections itself."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    return sock


def _worker(make_app: Callable[[], web.Application], host: str, port: int, ready) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the supervisor owns Ctrl-C; it sends SIGTERM
    asyncio.run(serve_until_signalled(make_app(), host, port, on_ready=lambda url: ready.put(os.getpid()),
                                      reuse_port=True))


def serve_workers(make_app: Callable[[], web.Application], host: str, port: int, workers: int,
                  start_timeout_s: float = 30.0) -> int:
    """Run ``workers`` processes, each serving ``make_app()`` on the same port, until
    SIGINT/SIGTERM or until a worker dies. Prints the ready line once all listen. Returns an
    exit code (0 = stopped on a signal)."""
    reserved = _reserve_port(host, port)
    port = reserved.getsockname()[1]
    ctx = multiprocessing.get_context("fork")  # the app factory needs no pickling
    ready = ctx.SimpleQueue()
    procs = [ctx.Process(target=_worker, args=(make_app, host, port, ready), daemon=True) for _ in range(workers)]
    for proc in procs:
        proc.start()
    try:
        code = _supervise(procs, ready, f"http://{host}:{port}", start_timeout_s, reserved)
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.join(10)
    print("serve-sim stopped", file=sys.stderr, flush=True)
    return code


def _supervise(procs: list, ready, url: str, start_timeout_s: float, reserved: socket.socket) -> int:
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    deadline, started = time.monotonic() + start_timeout_s, 0
    while started < len(procs) and not stop.is_set():
        if time.monotonic() > deadline or any(not p.is_alive() for p in procs):
            print(f"serve-sim: {len(procs) - started} worker(s) failed to start", file=sys.stderr, flush=True)
            return 1
        if ready.empty():
            time.sleep(0.02)
            continue
        ready.get()
        started += 1
    reserved.close()
    _announce(url)
    while not stop.wait(0.5):
        if any(not p.is_alive() for p in procs):
            print("serve-sim: a worker died; stopping", file=sys.stderr, flush=True)
            return 1
    return 0


@dataclass
class ServerThread:
    """A serve-sim app on its own event loop in a daemon thread. Use as a context manager."""

    app: web.Application
    host: str = DEFAULT_HOST
    port: int = 0
    url: str = ""

    def __enter__(self) -> "ServerThread":
        self._loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(self._loop)
            self._runner, self.url = self._loop.run_until_complete(_start(self.app, self.host, self.port, 0.5))
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, daemon=True, name="serve-sim")
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("serve-sim did not start within 10 s")
        return self

    def __exit__(self, *exc: object) -> None:
        future = asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop)
        future.result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()
