"""Small synthetic grids and strategies for the evaluation tests (not a test module)."""

from __future__ import annotations

import random
from typing import ClassVar, Mapping

from fleetsieve.evaluate.truth import Truth, build_truth
from fleetsieve.grid import Grid
from fleetsieve.metrics import GRID_METRIC_COLUMNS
from fleetsieve.records import Cell, Measurement
from fleetsieve.spec import FleetSpec, parse_spec
from fleetsieve.strategies.base import ProfilingState, Strategy

SLO_MS = 30_000.0


def levels_for(tp: int, n_levels: int) -> list[float]:
    return [round(0.5 * tp * (k + 1), 3) for k in range(n_levels)]


def make_spec(demands: Mapping[str, float], tps: list[int], budget: int, served_tol: float = 0.05) -> FleetSpec:
    return parse_spec({
        "gpu_budget": budget, "tp_degrees": tps,
        "workloads": {w: {"demand_rps": d, "slo": {"p99_e2el_ms": SLO_MS}} for w, d in demands.items()},
        "tolerance": {"fulfilment": 0.01, "served_rps": served_tol},
    })


def _run(cell: Cell, feasible: bool, repeat: int, keeps_up: bool = True) -> Measurement:
    p99 = 1_000.0 + 100.0 * repeat if feasible else 60_000.0 + 100.0 * repeat
    throughput = cell.load_rps if keeps_up else 0.5 * cell.load_rps
    metrics = {k: p99 / 2 for k in GRID_METRIC_COLUMNS}  # every grid column, so the grid can be written
    metrics.update(request_throughput=throughput, p99_e2el_ms=p99)
    return Measurement(cell, metrics=metrics,
                       gpu_seconds=100.0 * cell.tp, duration_s=100.0, repeat=repeat)


def monotone_grid(capacity_index: Mapping[tuple[str, int], int], n_levels: int, repeats: int = 1) -> Grid:
    """Levels ``0.5*tp*(k+1)``; the first ``capacity_index[cfg]`` levels of each config are feasible."""
    runs = []
    for (w, tp), k_cap in capacity_index.items():
        for k, load in enumerate(levels_for(tp, n_levels)):
            runs += [_run(Cell(w, tp, load), k < k_cap, r) for r in range(repeats)]
    return Grid(tuple(runs), "test-grid")


def make_truth(capacity_index: Mapping[tuple[str, int], int], demands: Mapping[str, float], budget: int,
               n_levels: int = 4, repeats: int = 1) -> Truth:
    tps = sorted({tp for _, tp in capacity_index})
    return build_truth(make_spec(demands, tps, budget), monotone_grid(capacity_index, n_levels, repeats))


class SpaceOrder(Strategy):
    """Every unmeasured cell once, in the space's order."""

    name: ClassVar[str] = "space-order"

    def propose(self, state: ProfilingState, n: int = 1) -> list[Cell]:
        return state.unmeasured()[:n]


class SeededShuffle(Strategy):
    """Every unmeasured cell once, in an order drawn from the state's seed."""

    name: ClassVar[str] = "seeded-shuffle"

    def propose(self, state: ProfilingState, n: int = 1) -> list[Cell]:
        cells = state.knowledge.space.cells()
        random.Random(state.seed).shuffle(cells)
        return [c for c in cells if c not in state.knowledge.runs][:n]


class SameCellThrice(Strategy):
    """Asks for the first cell of the space three times, then stops."""

    name: ClassVar[str] = "same-cell"

    def propose(self, state: ProfilingState, n: int = 1) -> list[Cell]:
        first = state.knowledge.space.cells()[0]
        return [first] if len(state.knowledge.runs.get(first, [])) < 3 else []
