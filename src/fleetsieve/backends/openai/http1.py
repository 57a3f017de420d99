"""A lean HTTP/1.1 client for the load generator: streamed POSTs over a keep-alive pool.

Why not aiohttp's client: at 1,000 streamed requests/s on two shared cores its per-request
machinery (request/response objects, a stream reader that wakes the request's task for every
chunk) cost more CPU than the server under test. Here a connection is an
``asyncio.Protocol`` that parses the response in the event loop's read callback and hands
each piece of body to the request's ``on_body`` callback at once, so a token is stamped the
moment its bytes are read, with no task wake-up per chunk. Only what streaming
OpenAI-compatible servers (vLLM, SGLang, serve-sim) use is supported: ``Content-Length``,
chunked and read-until-close bodies, keep-alive, ``http`` and ``https``.

Failures are values: :meth:`Pool.post` returns ``None`` on success or a reason string whose
prefix the backend classifies (``connection refused``, ``HTTP 503: ...``, ``stream cut
mid-response``, ``timeout``). It never raises for a server-side fault.
"""

from __future__ import annotations

import asyncio
import collections
from dataclasses import dataclass
from typing import Callable
from urllib.parse import urlsplit

from fleetsieve.errors import InputError

#: Body bytes kept from a non-200 response, for the error message.
_ERROR_BODY_LIMIT = 1024
_HEAD_LIMIT = 64 * 1024


@dataclass(frozen=True)
class Endpoint:
    """Where requests go: host, port, TLS or not, and the ``Host`` header."""

    host: str
    port: int
    tls: bool
    base_path: str

    @property
    def host_header(self) -> str:
        default = 443 if self.tls else 80
        return self.host if self.port == default else f"{self.host}:{self.port}"


def parse_endpoint(url: str) -> Endpoint:
    """``http://127.0.0.1:8000/prefix`` -> Endpoint; InputError for other schemes."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError("endpoint", f"{url!r} is not an http:// or https:// URL")
    tls = parts.scheme == "https"
    return Endpoint(parts.hostname, parts.port or (443 if tls else 80), tls, parts.path.rstrip("/"))


class _Exchange:
    """One request's view of its response: status, body callback, completion future."""

    __slots__ = ("on_body", "done", "status", "error_body", "received", "timer")

    def __init__(self, on_body: Callable[[bytes], None], done: asyncio.Future) -> None:
        self.on_body, self.done = on_body, done
        self.status = 0
        self.error_body = bytearray()
        self.received = 0  # response bytes seen (0 = the server never answered)
        self.timer: asyncio.TimerHandle | None = None

    def body(self, piece: bytes) -> None:
        if self.status == 200:
            self.on_body(piece)
        elif len(self.error_body) < _ERROR_BODY_LIMIT:
            self.error_body += piece

    def finish(self, error: str | None) -> None:
        if self.timer is not None:
            self.timer.cancel()
        if not self.done.done():
            if error is None and self.status != 200:
                text = self.error_body[:200].decode("utf-8", "replace")
                error = f"HTTP {self.status}: {text}"
            self.done.set_result(error)


class _Stale(str):
    """A reused keep-alive connection closed before any answer: the request is sent once more on
    a new connection, as HTTP clients do (the server may have seen the first copy)."""


_STALE = _Stale("stream cut mid-response: keep-alive connection closed by the server before answering")


@dataclass
class _Head:
    """The parts of a response head the reader needs."""

    status: int
    length: int | None
    chunked: bool
    keep_alive: bool


def parse_head(head: bytes) -> _Head:
    """Status line and headers (without the blank line); ValueError when malformed."""
    lines = head.decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    if not version.startswith("HTTP/1."):
        raise ValueError(f"bad status line {lines[0][:60]!r}")
    status = int(rest.split(" ", 1)[0])
    length, chunked, keep_alive = None, False, version == "HTTP/1.1"
    for line in lines[1:]:
        name, _, value = line.partition(":")
        name, value = name.strip().lower(), value.strip().lower()
        if name == "content-length":
            length = int(value)
        elif name == "transfer-encoding":
            chunked = value.endswith("chunked")
        elif name == "connection":
            keep_alive = "close" not in value and (keep_alive or "keep-alive" in value)
    return _Head(status, length, chunked, keep_alive)


class _Connection(asyncio.Protocol):
    """One keep-alive connection; reads the response of at most one exchange at a time.

    Body modes: ``"length"`` (``remaining`` bytes), ``"size"`` / ``"data"`` / ``"crlf"`` /
    ``"trailer"`` (chunked encoding), ``"eof"`` (read until the server closes).
    """

    def __init__(self, pool: "Pool") -> None:
        self.pool = pool
        self.transport: asyncio.Transport | None = None
        self.exchange: _Exchange | None = None
        self.closed = False
        self.reused = False
        self._buf = b""
        self._mode = "head"
        self._remaining = 0
        self._keep_alive = True

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def send(self, data: bytes, exchange: _Exchange) -> None:
        self.exchange, self._mode, self._buf = exchange, "head", b""
        self.transport.write(data)

    def abort(self) -> None:
        """Drop the connection (its response is half read, so it cannot be reused)."""
        self.exchange = None
        if self.transport is not None:
            self.transport.abort()

    def data_received(self, data: bytes) -> None:
        exchange = self.exchange
        if exchange is None:  # bytes nobody asked for: the connection is unusable
            self.abort()
            return
        exchange.received += len(data)
        self._buf = self._buf + data if self._buf else data
        try:
            while self._buf and self.exchange is not None and self._step():
                pass
        except ValueError as err:
            self._fail(f"bad HTTP response: {err}")
        except Exception as err:  # noqa: BLE001 - the body callback failed: report it on the request
            self._fail(f"client error while reading the stream: {type(err).__name__}: {err}")

    def eof_received(self) -> bool:
        return False  # let the transport close; connection_lost decides what that meant

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.pool.forget(self)
        exchange, self.exchange = self.exchange, None
        if exchange is None:
            return
        if self._mode == "eof":
            self._deliver(exchange, self._buf)
            exchange.finish(None)
        elif exchange.received == 0 and self.reused:
            exchange.finish(_STALE)
        else:
            why = type(exc).__name__ if exc else "connection closed"
            exchange.finish(f"stream cut mid-response: {why} after {exchange.received} bytes")

    def _fail(self, reason: str) -> None:
        exchange = self.exchange
        self.abort()
        if exchange is not None:
            exchange.finish(reason)

    def _step(self) -> bool:
        """Consume what the current mode can from the buffer; False when it needs more bytes."""
        mode = self._mode
        if mode == "data" or mode == "length":
            return self._take_body()
        if mode == "head":
            return self._take_head()
        if mode == "size":
            return self._take_chunk_size()
        if mode == "crlf":
            return self._take_crlf()
        if mode == "trailer":
            return self._take_trailer()
        self._deliver(self.exchange, self._buf)  # "eof": everything until the server closes
        self._buf = b""
        return False

    def _take_head(self) -> bool:
        end = self._buf.find(b"\r\n\r\n")
        if end < 0:
            if len(self._buf) > _HEAD_LIMIT:
                raise ValueError("response head too long")
            return False
        head, self._buf = parse_head(self._buf[:end]), self._buf[end + 4:]
        if 100 <= head.status < 200:
            return True  # an interim response: the real head follows
        self.exchange.status, self._keep_alive = head.status, head.keep_alive
        if head.chunked:
            self._mode = "size"
        elif head.length is not None:
            self._mode, self._remaining = "length", head.length
            if head.length == 0:
                self._complete()
        else:
            self._mode, self._keep_alive = "eof", False
        return True

    def _take_body(self) -> bool:
        buf, remaining = self._buf, self._remaining
        if len(buf) <= remaining:
            piece, self._buf = buf, b""
        else:
            piece, self._buf = buf[:remaining], buf[remaining:]
        self._remaining = remaining - len(piece)
        self._deliver(self.exchange, piece)
        if self._remaining == 0:
            if self._mode == "length":
                self._complete()
            else:
                self._mode = "crlf"
        return True

    def _take_chunk_size(self) -> bool:
        end = self._buf.find(b"\r\n")
        if end < 0:
            return False
        size = int(self._buf[:end].split(b";", 1)[0], 16)
        self._buf = self._buf[end + 2:]
        self._mode, self._remaining = ("trailer", 0) if size == 0 else ("data", size)
        return True

    def _take_crlf(self) -> bool:
        if len(self._buf) < 2:
            return False
        if self._buf[:2] != b"\r\n":
            raise ValueError("chunk not followed by CRLF")
        self._buf, self._mode = self._buf[2:], "size"
        return True

    def _take_trailer(self) -> bool:
        end = self._buf.find(b"\r\n")
        if end < 0:
            return False
        line, self._buf = self._buf[:end], self._buf[end + 2:]
        if not line:
            self._complete()
        return True

    @staticmethod
    def _deliver(exchange: _Exchange | None, piece: bytes) -> None:
        if piece and exchange is not None:
            exchange.body(piece)

    def _complete(self) -> None:
        exchange, self.exchange = self.exchange, None
        if self._keep_alive and not self._buf and not self.closed:
            self.pool.release(self)
        else:
            self.abort()
        exchange.finish(None)


class Pool:
    """Keep-alive connections to one endpoint, shared by every request of a run.

    ``max_connections`` caps open connections (0 = no cap); a request over the cap waits for
    a free connection, and that wait is part of its measured latency. Idle connections are
    reused last-in first-out, so a few warm ones carry a light load.
    """

    def __init__(self, endpoint: Endpoint, *, timeout_s: float, connect_timeout_s: float = 5.0,
                 max_connections: int = 0, headers: dict[str, str] | None = None) -> None:
        self.endpoint, self.timeout_s, self.connect_timeout_s = endpoint, timeout_s, connect_timeout_s
        self.max_connections = max_connections
        self.connections_opened = 0
        self._idle: list[_Connection] = []
        self._open: set[_Connection] = set()
        self._connecting = 0
        self._waiters: collections.deque[asyncio.Future] = collections.deque()
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        self._headers = (f"Host: {endpoint.host_header}\r\nContent-Type: application/json\r\n"
                         f"Accept: text/event-stream\r\n{extra}").encode("latin-1")
        self._loop = asyncio.get_running_loop()

    def request_bytes(self, path: str, body: bytes) -> bytes:
        """The whole POST request: request line, headers, body."""
        line = f"POST {self.endpoint.base_path}{path} HTTP/1.1\r\n".encode("latin-1")
        return b"%s%sContent-Length: %d\r\n\r\n%s" % (line, self._headers, len(body), body)

    async def post(self, path: str, body: bytes, on_body: Callable[[bytes], None]) -> str | None:
        """Send one POST; ``on_body`` gets each piece of a 200 response's body as it is read.
        Returns None when the response completed, else the reason it did not."""
        data, deadline = self.request_bytes(path, body), self._loop.time() + self.timeout_s
        for _ in range(2):  # a second try only when a reused connection turned out stale
            result = await self._exchange(data, on_body, deadline)
            if not isinstance(result, _Stale):
                return result
        return result

    async def _exchange(self, data: bytes, on_body: Callable[[bytes], None], deadline: float) -> str | None:
        conn, error = await self._acquire(deadline)
        if conn is None:
            return error
        exchange = _Exchange(on_body, self._loop.create_future())
        exchange.timer = self._loop.call_at(deadline, self._expire, conn, exchange)
        conn.send(data, exchange)
        try:
            return await exchange.done
        except asyncio.CancelledError:
            exchange.timer.cancel()
            conn.abort()
            raise

    def _expire(self, conn: _Connection, exchange: _Exchange) -> None:
        exchange.finish(f"timeout after {self.timeout_s:g} s")
        conn.abort()

    async def _acquire(self, deadline: float) -> tuple[_Connection | None, str | None]:
        while self._idle:
            conn = self._idle.pop()
            if not conn.closed:
                conn.reused = True
                return conn, None
        if self.max_connections and len(self._open) + self._connecting >= self.max_connections:
            waiter = self._loop.create_future()
            self._waiters.append(waiter)
            conn = await waiter  # a released connection, or None: a slot freed up
            if conn is not None:
                conn.reused = True
                return conn, None
        return await self._connect(deadline)

    async def _connect(self, deadline: float) -> tuple[_Connection | None, str | None]:
        ep, limit = self.endpoint, max(0.0, min(self.connect_timeout_s, deadline - self._loop.time()))
        self._connecting += 1
        try:
            ssl = _tls_context() if ep.tls else None
            _, conn = await asyncio.wait_for(self._loop.create_connection(
                lambda: _Connection(self), ep.host, ep.port, ssl=ssl), limit)
            self._open.add(conn)
        except (OSError, asyncio.TimeoutError) as err:
            return None, _connect_error(err, limit, ep)
        finally:
            self._connecting -= 1
            self._wake_waiter()
        self.connections_opened += 1
        return conn, None

    def release(self, conn: _Connection) -> None:
        """A connection whose response is complete: hand it to a waiter, or keep it idle."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(conn)
                return
        self._idle.append(conn)

    def forget(self, conn: _Connection) -> None:
        """A connection closed: drop it, and let a waiter open a new one in its place."""
        self._open.discard(conn)
        self._wake_waiter()

    def _wake_waiter(self) -> None:
        if not self.max_connections or len(self._open) + self._connecting >= self.max_connections:
            return
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def close(self) -> None:
        """Close every connection (in flight ones included)."""
        for conn in list(self._open):
            conn.abort()
        self._idle.clear()


def _connect_error(err: BaseException, limit_s: float, ep: Endpoint) -> str:
    if isinstance(err, asyncio.TimeoutError):
        return f"timeout after {limit_s:g} s connecting to {ep.host}:{ep.port}"
    if isinstance(err, ConnectionRefusedError) or "refused" in str(err).lower():
        return f"connection refused: {err}"
    return f"connection failed: {err}"


def _tls_context():
    import ssl  # only https endpoints pay for it

    return ssl.create_default_context()
