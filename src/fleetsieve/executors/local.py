"""Executors in this process: ``local`` (a thread per slot, the default) and ``simulated`` (a virtual clock)."""

from __future__ import annotations

import heapq
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Mapping

from fleetsieve.backends.base import Backend
from fleetsieve.executors.base import Executor, Finished
from fleetsieve.records import Measurement
from fleetsieve.store.base import Proposal


def _measure(backend: Backend, proposal: Proposal, slo: Mapping[str, float]) -> Measurement:
    return backend.measure(proposal.cell, seed=proposal.seed, repeat=proposal.repeat, slo=slo)


class LocalExecutor(Executor):
    """Runs each measurement on a worker thread, ``slots`` at a time; results return as they finish.

    With one slot the campaign is fully deterministic for a deterministic backend.
    """

    name = "local"

    def __init__(self, args=None) -> None:
        super().__init__(args)
        self._pool: ThreadPoolExecutor | None = None
        self._futures: dict[Future[Measurement], Proposal] = {}

    def start(self, backend: Backend, slots: int) -> None:
        self._backend = backend
        self._pool = ThreadPoolExecutor(max_workers=slots, thread_name_prefix="fleetsieve-measure")

    def submit(self, proposal: Proposal, slo: Mapping[str, float]) -> None:
        assert self._pool is not None, "start() first"
        self._futures[self._pool.submit(_measure, self._backend, proposal, slo)] = proposal

    def wait(self) -> Finished:
        if not self._futures:
            return []
        done, _ = wait(self._futures, return_when=FIRST_COMPLETED)
        # Report simultaneous finishes in submission order, so ties never depend on thread timing.
        ordered = [f for f in self._futures if f in done]
        return [(self._futures.pop(f), f.result()) for f in ordered]

    @property
    def in_flight(self) -> int:
        return len(self._futures)

    def shutdown(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


def run_seconds(m: Measurement) -> float:
    """How long a measurement occupies its slot: its duration, else its GPU-seconds over its TP."""
    return m.duration_s if m.duration_s > 0 else m.gpu_seconds / max(1, m.cell.tp)


class SimulatedClockExecutor(Executor):
    """Measures at once but returns results in the order they would finish on a virtual clock.

    Each slot is busy for ``run_seconds`` of the measurement it runs. ``clock_s`` is the virtual
    wall-clock time so far: the time to decision of a parallel campaign, without waiting for it.
    Deterministic for a deterministic backend, whatever the number of slots.
    """

    name = "simulated"

    def __init__(self, args=None) -> None:
        super().__init__(args)
        self.clock_s = 0.0
        self._queue: list[tuple[float, int, Proposal, Measurement]] = []
        self._submitted = 0

    def start(self, backend: Backend, slots: int) -> None:
        self._backend = backend

    def submit(self, proposal: Proposal, slo: Mapping[str, float]) -> None:
        m = _measure(self._backend, proposal, slo)
        heapq.heappush(self._queue, (self.clock_s + run_seconds(m), self._submitted, proposal, m))
        self._submitted += 1

    def wait(self) -> Finished:
        if not self._queue:
            return []
        finish, _, proposal, m = heapq.heappop(self._queue)
        self.clock_s = max(self.clock_s, finish)
        return [(proposal, m)]

    @property
    def in_flight(self) -> int:
        return len(self._queue)
