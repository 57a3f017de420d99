"""Running a serve-sim app: in the foreground (the CLI) or on a background thread (tests)."""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
from dataclasses import dataclass

from aiohttp import web

DEFAULT_HOST = "127.0.0.1"  # loopback only unless the user asks for more
READY_PREFIX = "serve-sim listening on "


async def _start(app: web.Application, host: str, port: int, shutdown_s: float = 5.0) -> tuple[web.AppRunner, str]:
    # shutdown_s bounds how long stopping waits for streams still open
    runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=shutdown_s)
    await runner.setup()
    site = web.TCPSite(runner, host, port, backlog=1024)
    await site.start()
    bound = runner.addresses[0][1]
    return runner, f"http://{host}:{bound}"


async def serve_until_signalled(app: web.Application, host: str = DEFAULT_HOST, port: int = 8000) -> None:
    """Serve until SIGINT/SIGTERM; prints one ``serve-sim listening on URL`` line when ready."""
    runner, url = await _start(app, host, port)
    print(READY_PREFIX + url, flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()
        print("serve-sim stopped", file=sys.stderr, flush=True)


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
