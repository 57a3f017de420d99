"""Async open-loop load generator speaking the streaming OpenAI API over HTTP/1.1 keep-alive.

Requests are sent at their planned arrival times whatever the server does (open loop), so
queueing shows up as latency, never as a lower offered rate. A run ends when every request
has finished, when a watcher (the early-abort rule) says stop, or when too many requests
failed (a circuit breaker, so a dead server costs seconds, not the whole run).

Hot path, per token: the connection's read callback (``http1``) hands body bytes to the
request's ``StreamParser``; when they complete content events, one ``perf_counter_ns`` stamp
(taken as the bytes were read, before parsing) goes into the request's preallocated list.
Stamps become run-relative seconds only when the request ends.

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

import numpy as np

from fleetsieve.backends.openai.http1 import Pool, parse_endpoint
from fleetsieve.backends.openai.protocol import PATHS, Api, BodyMaker, StreamParser
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
    """How to talk to the server. ``max_connections`` caps open connections (0 = no cap; a
    request over the cap waits for one, and the wait counts in its latency)."""

    endpoint: str
    model: str
    api: Api = "completions"
    request_timeout_s: float = 300.0
    connect_timeout_s: float = 5.0
    max_failed_requests: int = 20
    force_output_length: bool = True
    time_scale: float = 1.0
    seed: int = 0
    max_connections: int = 0


@dataclass(frozen=True)
class InFlight:
    """A watcher's view of a request on the wire (run-relative seconds)."""

    index: int
    scheduled_s: float
    start_s: float
    prompt_tokens: int
    first_token_s: float = math.nan
    tokens: int = 0


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
    connections_opened: int = 0

    def most_common_error(self) -> str | None:
        errors = Counter(r.error for r in self.records if r.error)
        return errors.most_common(1)[0][0] if errors else None


class _Live:
    """A request being streamed: the hot path's mutable state, stamps in raw nanoseconds."""

    __slots__ = ("index", "scheduled_s", "start_ns", "prompt_tokens", "stamps_ns", "filled")

    def __init__(self, index: int, scheduled_s: float, start_ns: int, prompt_tokens: int, expected: int) -> None:
        self.index, self.scheduled_s, self.start_ns = index, scheduled_s, start_ns
        self.prompt_tokens = prompt_tokens
        self.stamps_ns = [0] * expected  # preallocated: one slot per expected token
        self.filled = 0

    def stamp(self, now_ns: int, tokens: int) -> None:
        """``tokens`` content events completed by bytes read at ``now_ns``."""
        n = self.filled
        if tokens == 1 and n < len(self.stamps_ns):
            self.stamps_ns[n] = now_ns
        else:  # several events in one read, or more tokens than expected (the list grows)
            self.stamps_ns[n:n + tokens] = (now_ns,) * tokens
        self.filled = n + tokens


class _Run:
    """One run of a plan. Private: ``run_load`` is the entry point."""

    def __init__(self, plan: RequestPlan, options: ClientOptions, watcher: Watcher | None,
                 check_interval_s: float) -> None:
        self.plan, self.opt, self.watcher = plan, options, watcher
        self.check_interval_s = check_interval_s
        self.endpoint = parse_endpoint(options.endpoint)
        self.bodies = BodyMaker(options.api, options.model, np.random.default_rng(options.seed),
                                options.force_output_length)
        self.arrivals: list[float] = plan.arrival_s.tolist()
        self.prompts: list[int] = np.asarray(plan.prompt_tokens, dtype=np.int64).tolist()
        self.outputs: list[int] = np.asarray(plan.output_tokens, dtype=np.int64).tolist()
        self.finished: list[RequestRecord] = []
        self.live: dict[int, _Live] = {}
        self.tasks: set[asyncio.Task] = set()
        self.settled = asyncio.Event()  # set when every request ended, or the run was stopped
        self.dispatching = True
        self.stopped_by: str | None = None
        self.stop_reason: str | None = None
        self.failures = 0
        self.sent = 0
        self.running = 0  # requests sent and not finished yet
        self.s_per_ns = 1e-9 / options.time_scale
        self.t0_ns = time.perf_counter_ns()

    def now(self) -> float:
        """Model-time seconds since the run started."""
        return (time.perf_counter_ns() - self.t0_ns) * self.s_per_ns

    def seconds(self, stamp_ns: int) -> float:
        return (stamp_ns - self.t0_ns) * self.s_per_ns

    def halt(self, by: str, reason: str) -> None:
        if self.stopped_by is None:
            self.stopped_by, self.stop_reason = by, reason
            self.settled.set()

    async def main(self) -> RunOutcome:
        pool = Pool(self.endpoint, timeout_s=self.opt.request_timeout_s * self.opt.time_scale,
                    connect_timeout_s=self.opt.connect_timeout_s, max_connections=self.opt.max_connections)
        self.t0_ns = time.perf_counter_ns()
        watch = asyncio.create_task(self._watch())
        dispatch = asyncio.create_task(self._dispatch(pool))
        try:
            await self.settled.wait()
        finally:
            dispatch.cancel()
            watch.cancel()
            await self._cancel_in_flight()
            pool.close()
        wall = (time.perf_counter_ns() - self.t0_ns) * 1e-9
        records = tuple(sorted(self.finished, key=lambda r: r.index))
        return RunOutcome(records, wall, wall / self.opt.time_scale, self.stopped_by, self.stop_reason,
                          pool.connections_opened)

    async def _dispatch(self, pool: Pool) -> None:
        scale_ns, t0_ns = self.opt.time_scale * 1e9, self.t0_ns
        for i, arrival in enumerate(self.arrivals):
            delay_ns = t0_ns + arrival * scale_ns - time.perf_counter_ns()
            if delay_ns > 0:
                await asyncio.sleep(delay_ns * 1e-9)
            task = asyncio.create_task(self._one(pool, i))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
            self.sent += 1
            self.running += 1
        self.dispatching = False
        self._settle_if_idle()

    async def _cancel_in_flight(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        if self.tasks:
            await asyncio.gather(*self.tasks, return_exceptions=True)

    async def _watch(self) -> None:
        while self.watcher is not None:
            await asyncio.sleep(self.check_interval_s * self.opt.time_scale)
            reason = self.watcher(self.snapshot())
            if reason:
                self.halt("watcher", reason)
                return

    def snapshot(self) -> RunSnapshot:
        """What a watcher sees now (copies; the run goes on changing)."""
        views = [InFlight(r.index, r.scheduled_s, self.seconds(r.start_ns), r.prompt_tokens,
                          self.seconds(r.stamps_ns[0]) if r.filled else math.nan, r.filled)
                 for r in list(self.live.values())]
        return RunSnapshot(self.now(), list(self.finished), views, self.sent)

    async def _one(self, pool: Pool, i: int) -> None:
        output = self.outputs[i]
        body = self.bodies(self.prompts[i], output)
        live = _Live(i, self.arrivals[i], time.perf_counter_ns(), self.prompts[i], output)
        self.live[i] = live
        parser = StreamParser(self.opt.api)
        feed, stamp, clock = parser.feed, live.stamp, time.perf_counter_ns

        def on_body(piece: bytes) -> None:
            now_ns = clock()  # when the bytes were read, before any parsing
            new = feed(piece)
            if new:
                stamp(now_ns, new)

        try:
            error = await pool.post(PATHS[self.opt.api], body, on_body)
        except asyncio.CancelledError:
            error = f"cancelled: {self.stop_reason or 'run stopped'}"
        except Exception as err:  # noqa: BLE001 - a client bug must end this request, not hang the run
            error = f"client error: {type(err).__name__}: {err}"[:300]
        self._finish(live, parser, error)

    def _finish(self, live: _Live, parser: StreamParser, error: str | None) -> None:
        self.live.pop(live.index, None)
        if error is None:
            error = parser.error or _stream_end_error(parser, live)
        t0, k = self.t0_ns, self.s_per_ns
        times = tuple((s - t0) * k for s in live.stamps_ns[:live.filled])
        self.finished.append(RequestRecord(live.index, live.scheduled_s, (live.start_ns - t0) * k,
                                           live.prompt_tokens, parser.output_tokens, times, error))
        if error and not error.startswith("cancelled"):
            self.failures += 1
            if self.failures > self.opt.max_failed_requests:
                self.halt("failures", f"{self.failures} requests failed; most common: {error}")
        self.running -= 1
        self._settle_if_idle()

    def _settle_if_idle(self) -> None:
        if not self.dispatching and not self.running:
            self.settled.set()


def _stream_end_error(parser: StreamParser, live: _Live) -> str | None:
    if not parser.done:
        return f"stream cut mid-response: ended before [DONE] after {parser.content_chunks} chunks"
    if not live.filled:
        return "empty response: no content chunks"
    return None


async def run_load_async(plan: RequestPlan, options: ClientOptions, *, watcher: Watcher | None = None,
                         check_interval_s: float = 1.0) -> RunOutcome:
    """Send ``plan`` open-loop to ``options.endpoint``; never raises for server-side faults."""
    return await _Run(plan, options, watcher, check_interval_s).main()


def run_load(plan: RequestPlan, options: ClientOptions, *, watcher: Watcher | None = None,
             check_interval_s: float = 1.0) -> RunOutcome:
    """Blocking wrapper around :func:`run_load_async` (runs its own event loop)."""
    return asyncio.run(run_load_async(plan, options, watcher=watcher, check_interval_s=check_interval_s))
