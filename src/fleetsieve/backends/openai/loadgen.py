"""Async open-loop load generator over aiohttp, speaking the streaming OpenAI API.

Requests are sent at their planned arrival times whatever the server does (open loop), so
queueing shows up as latency, never as a lower offered rate. A run ends when every request
has finished, when a watcher (the early-abort rule) says stop, or when too many requests
failed (a circuit breaker, so a dead server costs seconds, not the whole run).

``time_scale`` serves simulated servers that run faster than real time: arrivals are sent
``time_scale`` times sooner and every measured time is divided by it, so records are in
the served model's own seconds.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Sequence

import aiohttp
import numpy as np

from fleetsieve.backends.openai.protocol import PATHS, Api, StreamParser, build_body
from fleetsieve.backends.openai.timing import RequestRecord


@dataclass(frozen=True)
class RequestPlan:
    """What to send: arrival offsets (s) and exact token lengths, one entry per request."""

    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    duration_s: float

    def __len__(self) -> int:
        return len(self.arrival_s)


@dataclass(frozen=True)
class ClientOptions:
    """How to talk to the server."""

    endpoint: str
    model: str
    api: Api = "completions"
    request_timeout_s: float = 300.0
    connect_timeout_s: float = 5.0
    max_failed_requests: int = 20
    force_output_length: bool = True
    time_scale: float = 1.0
    seed: int = 0


@dataclass
class InFlight:
    """A request on the wire (mutable while streaming)."""

    index: int
    scheduled_s: float
    start_s: float
    prompt_tokens: int
    chunk_times_s: list[float]

    @property
    def first_token_s(self) -> float:
        return self.chunk_times_s[0] if self.chunk_times_s else math.nan


@dataclass(frozen=True)
class RunSnapshot:
    """What a watcher sees at one check: the clock, finished records, requests on the wire."""

    now_s: float
    finished: Sequence[RequestRecord]
    in_flight: Sequence[InFlight]
    sent: int


#: A watcher returns a reason to stop the run, or None to carry on.
Watcher = Callable[[RunSnapshot], "str | None"]


@dataclass(frozen=True)
class RunOutcome:
    """The records of one run and why it ended early, if it did."""

    records: tuple[RequestRecord, ...]
    wall_s: float
    model_s: float
    stopped_by: str | None = None
    stop_reason: str | None = None

    def most_common_error(self) -> str | None:
        errors = Counter(r.error for r in self.records if r.error)
        return errors.most_common(1)[0][0] if errors else None


def _describe_error(err: BaseException, timeout_s: float) -> str:
    if isinstance(err, asyncio.TimeoutError):
        return f"timeout after {timeout_s:g} s"
    if isinstance(err, aiohttp.ClientConnectorError):
        return f"connection refused: {err.os_error or err}"
    if isinstance(err, (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError)):
        return f"stream cut mid-response: {type(err).__name__}"
    return f"{type(err).__name__}: {err}"[:300]


class _Run:
    """One run of a plan. Private: ``run_load`` is the entry point."""

    def __init__(self, plan: RequestPlan, options: ClientOptions, watcher: Watcher | None,
                 check_interval_s: float) -> None:
        self.plan, self.opt, self.watcher = plan, options, watcher
        self.check_interval_s = check_interval_s
        self.url = options.endpoint.rstrip("/") + PATHS[options.api]
        self.rng = np.random.default_rng(options.seed)
        self.finished: list[RequestRecord] = []
        self.in_flight: dict[int, InFlight] = {}
        self.tasks: set[asyncio.Task] = set()
        self.stop = asyncio.Event()
        self.stopped_by: str | None = None
        self.stop_reason: str | None = None
        self.failures = 0
        self.sent = 0
        self.t0 = time.monotonic()

    def now(self) -> float:
        """Model-time seconds since the run started."""
        return (time.monotonic() - self.t0) / self.opt.time_scale

    def halt(self, by: str, reason: str) -> None:
        if not self.stop.is_set():
            self.stopped_by, self.stop_reason = by, reason
            self.stop.set()

    async def main(self) -> RunOutcome:
        timeout = aiohttp.ClientTimeout(total=self.opt.request_timeout_s * self.opt.time_scale,
                                        sock_connect=self.opt.connect_timeout_s)
        connector = aiohttp.TCPConnector(limit=0, force_close=False)
        async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:
            self.t0 = time.monotonic()
            watch = asyncio.create_task(self._watch())
            await self._dispatch(session)
            await self._drain()
            watch.cancel()
        wall = time.monotonic() - self.t0
        records = tuple(sorted(self.finished, key=lambda r: r.index))
        return RunOutcome(records, wall, wall / self.opt.time_scale, self.stopped_by, self.stop_reason)

    async def _dispatch(self, session: aiohttp.ClientSession) -> None:
        for i in range(len(self.plan)):
            delay = self.t0 + float(self.plan.arrival_s[i]) * self.opt.time_scale - time.monotonic()
            if delay > 0:
                try:
                    await asyncio.wait_for(self.stop.wait(), delay)
                except asyncio.TimeoutError:
                    pass
            if self.stop.is_set():
                return
            task = asyncio.create_task(self._one(session, i))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
            self.sent += 1

    async def _drain(self) -> None:
        while self.tasks and not self.stop.is_set():
            stopper = asyncio.create_task(self.stop.wait())
            await asyncio.wait(set(self.tasks) | {stopper}, return_when=asyncio.FIRST_COMPLETED)
            stopper.cancel()
        for task in list(self.tasks):
            task.cancel()
        if self.tasks:
            await asyncio.gather(*self.tasks, return_exceptions=True)

    async def _watch(self) -> None:
        while self.watcher is not None:
            await asyncio.sleep(self.check_interval_s * self.opt.time_scale)
            snapshot = RunSnapshot(self.now(), list(self.finished), list(self.in_flight.values()), self.sent)
            reason = self.watcher(snapshot)
            if reason:
                self.halt("watcher", reason)
                return

    async def _one(self, session: aiohttp.ClientSession, i: int) -> None:
        prompt, output = int(self.plan.prompt_tokens[i]), int(self.plan.output_tokens[i])
        body = build_body(self.opt.api, self.opt.model, prompt, output, self.rng, self.opt.force_output_length)
        flight = InFlight(i, float(self.plan.arrival_s[i]), self.now(), prompt, [])
        self.in_flight[i] = flight
        parser = StreamParser(self.opt.api)
        error: str | None = None
        try:
            error = await self._stream(session, body, flight, parser)
        except asyncio.CancelledError:
            error = f"cancelled: {self.stop_reason or 'run stopped'}"
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as err:
            error = _describe_error(err, self.opt.request_timeout_s)
        self._finish(flight, parser, error)

    async def _stream(self, session: aiohttp.ClientSession, body: bytes, flight: InFlight,
                      parser: StreamParser) -> str | None:
        headers = {"Content-Type": "application/json"}
        async with session.post(self.url, data=body, headers=headers) as resp:
            if resp.status != 200:
                text = (await resp.text())[:200]
                return f"HTTP {resp.status}: {text}"
            async for data in resp.content.iter_any():
                new = parser.feed(data)
                if new:
                    stamp = self.now()
                    flight.chunk_times_s.extend([stamp] * new)
                if parser.error:
                    return parser.error
        if not parser.done:
            return f"stream cut mid-response: ended before [DONE] after {parser.content_chunks} chunks"
        return None

    def _finish(self, flight: InFlight, parser: StreamParser, error: str | None) -> None:
        self.in_flight.pop(flight.index, None)
        if error is None and not flight.chunk_times_s:
            error = "empty response: no content chunks"
        self.finished.append(RequestRecord(
            flight.index, flight.scheduled_s, flight.start_s, flight.prompt_tokens,
            parser.output_tokens, tuple(flight.chunk_times_s), error))
        if error and not error.startswith("cancelled"):
            self.failures += 1
            if self.failures > self.opt.max_failed_requests:
                self.halt("failures", f"{self.failures} requests failed; most common: {error}")


async def run_load_async(plan: RequestPlan, options: ClientOptions, *, watcher: Watcher | None = None,
                         check_interval_s: float = 1.0) -> RunOutcome:
    """Send ``plan`` open-loop to ``options.endpoint``; never raises for server-side faults."""
    return await _Run(plan, options, watcher, check_interval_s).main()


def run_load(plan: RequestPlan, options: ClientOptions, *, watcher: Watcher | None = None,
             check_interval_s: float = 1.0) -> RunOutcome:
    """Blocking wrapper around :func:`run_load_async` (runs its own event loop)."""
    return asyncio.run(run_load_async(plan, options, watcher=watcher, check_interval_s=check_interval_s))
