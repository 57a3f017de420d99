"""Local executors: the thread pool keeps every slot busy; the simulated clock orders results by finish time."""

from __future__ import annotations

import threading
import time

import pytest

from fleetsieve.backends.base import Backend
from fleetsieve.errors import InputError
from fleetsieve.executors import EXECUTORS, LocalExecutor, SimulatedClockExecutor, make_executor
from fleetsieve.records import Cell, Measurement
from fleetsieve.store import Proposal


class SlowBackend(Backend):
    """Sleeps ``load_rps / 100`` s per run and records how many runs overlap."""

    name = "slow"

    def __init__(self, args=None):
        super().__init__(args)
        self.lock, self.running, self.most = threading.Lock(), 0, 0

    def measure(self, cell, *, seed=0, repeat=0, slo=None):
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
        time.sleep(cell.load_rps / 100)
        with self.lock:
            self.running -= 1
        return Measurement(cell, duration_s=cell.load_rps, gpu_seconds=cell.tp * cell.load_rps, repeat=repeat)


def _proposals(loads):
    return [Proposal(f"p{i}", i, Cell("w", 1, float(L)), 0, 0) for i, L in enumerate(loads)]


def _drain(executor):
    out = []
    while executor.in_flight:
        out += executor.wait()
    return out


def test_thread_pool_runs_slots_at_once_and_returns_in_finish_order():
    backend, executor = SlowBackend(), LocalExecutor()
    executor.start(backend, slots=3)
    for p in _proposals([20, 1, 8]):
        executor.submit(p, {})
    finished = _drain(executor)
    executor.shutdown()
    assert backend.most == 3
    assert [p.cell.load_rps for p, _ in finished] == [1.0, 8.0, 20.0]
    assert all(p.cell == m.cell for p, m in finished)


def test_wait_with_nothing_in_flight_is_empty():
    for executor in (LocalExecutor(), SimulatedClockExecutor()):
        executor.start(SlowBackend(), 1)
        assert executor.wait() == [] and executor.in_flight == 0
        executor.shutdown()


def test_simulated_clock_orders_by_virtual_finish_and_keeps_time():
    executor = SimulatedClockExecutor()
    executor.start(SlowBackend(), slots=2)
    first, second, third = _proposals([0.5, 0.2, 0.1])
    executor.submit(first, {}), executor.submit(second, {})
    (done, _), = executor.wait()
    assert done is second and executor.clock_s == pytest.approx(0.2)
    executor.submit(third, {})  # starts at 0.2, ends at 0.3, before the first (0.5)
    assert [p for p, _ in _drain(executor)] == [third, first] and executor.clock_s == pytest.approx(0.5)


def test_registry():
    assert set(EXECUTORS) == {"local", "simulated", "ray"}
    assert isinstance(make_executor("simulated"), SimulatedClockExecutor)
    with pytest.raises(InputError, match="unknown executor 'gpu'"):
        make_executor("gpu")
