"""Token sources for serve-sim, and the asyncio driver that paces them.

An engine follows the simulator's protocol (``fleetsieve.sim``): ``add_request(request_id,
prompt_tokens, output_tokens, now_s)``, ``step() -> outcome | None`` where the outcome has
``duration_s``, ``new_tokens`` (request id -> tokens emitted this step) and ``finished``, and
``has_work``. ``make_token_source("sim", ...)`` uses the real simulator; ``"fixed"`` is a
documented stand-in with a constant step time, for protocol tests and load-generator
benchmarks where the engine's physics do not matter.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass(frozen=True)
class FixedStep:
    """Outcome of one step of the fixed engine (same fields the simulator's StepOutcome has)."""

    duration_s: float
    new_tokens: dict[int, int]
    finished: tuple[int, ...]
    preempted: tuple[int, ...] = ()


@dataclass
class FixedStepEngine:
    """Every running request gets one token per step; a step lasts ``step_s`` plus the
    prefill cost of requests admitted in it (``prefill_s_per_token`` each prompt token)."""

    step_s: float = 0.01
    prefill_s_per_token: float = 0.0
    _remaining: dict[int, int] = field(default_factory=dict)
    _pending_prefill: int = 0

    def add_request(self, request_id: int, prompt_tokens: int, output_tokens: int, now_s: float) -> None:
        self._remaining[request_id] = max(1, int(output_tokens))
        self._pending_prefill += int(prompt_tokens)

    @property
    def has_work(self) -> bool:
        return bool(self._remaining)

    def step(self) -> FixedStep | None:
        if not self._remaining:
            return None
        duration = self.step_s + self.prefill_s_per_token * self._pending_prefill
        self._pending_prefill = 0
        new = {rid: 1 for rid in self._remaining}
        finished = []
        for rid in new:
            self._remaining[rid] -= 1
            if self._remaining[rid] == 0:
                finished.append(rid)
        for rid in finished:
            del self._remaining[rid]
        return FixedStep(duration, new, tuple(finished))


def make_token_source(kind: str, *, model: str, gpu: str, tp: int, precision: str = "bf16",
                      step_ms: float = 10.0) -> Any:
    """Build the engine behind serve-sim: ``"sim"`` (the simulator) or ``"fixed"``."""
    if kind == "fixed":
        return FixedStepEngine(step_s=step_ms / 1e3)
    try:
        from fleetsieve.sim import make_engine  # the simulator is optional for the fixed mode
    except ImportError:
        from fleetsieve.sim.factory import make_engine
    # clients time the tokens themselves; a long-lived server should not also keep every gap
    return make_engine(model=model, gpu=gpu, tp=tp, precision=precision, record_itl=False)


#: Called with (tokens emitted, finished?) each time a request makes progress.
TokenSink = Callable[[int, bool], None]


class EngineDriver:
    """Steps an engine in an asyncio task and reports tokens to per-request sinks.

    Simulated time advances by each step's ``duration_s``; wall time follows it scaled by
    ``time_scale`` (1 = real time). With ``time_scale == 0`` the engine runs as fast as it
    can on a purely virtual clock. Tokens of a step are delivered when the step ends.
    """

    def __init__(self, engine: Any, time_scale: float = 1.0) -> None:
        self.engine, self.time_scale = engine, float(time_scale)
        self.virtual_now = 0.0
        self._sinks: dict[int, TokenSink] = {}
        self._next_id = 0
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._wall0 = time.monotonic()

    def start(self) -> None:
        self._wall0 = time.monotonic()
        self._task = asyncio.get_running_loop().create_task(self._loop())

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    def submit(self, prompt_tokens: int, output_tokens: int, sink: TokenSink) -> int:
        """Queue a request; ``sink`` hears about its tokens. Returns its engine id."""
        rid = self._next_id
        self._next_id += 1
        self._sinks[rid] = sink
        self.engine.add_request(rid, int(prompt_tokens), int(output_tokens), self._arrival_time())
        self._wake.set()
        return rid

    def forget(self, rid: int) -> None:
        """Stop reporting to a request whose client went away (the engine still finishes it)."""
        self._sinks.pop(rid, None)

    def _arrival_time(self) -> float:
        """Simulated time of an arrival now. An idle engine's clock catches up with the wall
        clock (arrivals keep their real spacing); a busy one's is driven by its steps only, so
        pacing jitter never inserts idle time into the simulation."""
        if self.time_scale <= 0:
            return self.virtual_now
        wall_now = (time.monotonic() - self._wall0) / self.time_scale
        if not self.engine.has_work:
            self.virtual_now = max(self.virtual_now, wall_now)
            return self.virtual_now
        return min(self.virtual_now, wall_now)

    async def _loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self.engine.has_work:
                outcome = self.engine.step()
                if outcome is None:
                    break
                self.virtual_now += outcome.duration_s
                await self._pace()
                self._deliver(outcome)

    async def _pace(self) -> None:
        if self.time_scale <= 0:
            await asyncio.sleep(0)
            return
        delay = self._wall0 + self.virtual_now * self.time_scale - time.monotonic()
        await asyncio.sleep(max(0.0, delay))

    def _deliver(self, outcome: Any) -> None:
        finished = set(outcome.finished)
        for rid, count in outcome.new_tokens.items():
            sink = self._sinks.get(rid)
            if sink is not None and count > 0:
                sink(int(count), rid in finished)
        for rid in finished:
            sink = self._sinks.pop(rid, None)
            if sink is not None and rid not in outcome.new_tokens:
                sink(0, True)
