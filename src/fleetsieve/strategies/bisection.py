"""Decision-unaware capacity searches: ``bisection`` (SLO capacity) and ``capacity-only``.

Both bisect, for every (workload, tp), the load levels between the proven bounds, like vLLM's
``serve_sla`` and GuideLLM's goodput search. ``bisection`` judges a run by the SLOs (the
knowledge's verdicts); ``capacity-only`` judges it by throughput alone and ignores tail latency,
which reproduces the failure of capacity-only sizing (a configuration that keeps up but whose
p99 is far over the SLO).
"""

from __future__ import annotations

from typing import Callable, ClassVar, Iterable, Mapping

import numpy as np
from pydantic import Field

from fleetsieve.knowledge import CellSpace, Config, bounds_for_levels
from fleetsieve.records import CapacityBounds, Cell, Measurement, Status, Verdict
from fleetsieve.spec import FleetSpec
from fleetsieve.strategies._common import DEFAULT_MAX_RUNS_PER_CELL
from fleetsieve.strategies.base import ProfilingState, Strategy, StrategyArgs

CellVerdict = Callable[[Cell], Verdict]


class BisectionArgs(StrategyArgs):
    max_runs_per_cell: int = Field(default=DEFAULT_MAX_RUNS_PER_CELL, ge=1)


def bisection_level(open_levels: list[float]) -> float:
    """The level that halves the candidates: kappa is ``lo`` or one of ``open_levels``."""
    return open_levels[len(open_levels) // 2]


def bisect_all(state: ProfilingState, bounds: Mapping[Config, CapacityBounds], verdict: CellVerdict,
               n: int, max_runs: int) -> list[Cell]:
    """One bisection cell per unresolved configuration, configurations in a seed-shuffled order."""
    configs = sorted(bounds)
    order = np.random.default_rng(state.seed).permutation(len(configs))
    picks: list[Cell] = []
    for i in order:
        (w, tp), b = configs[i], bounds[configs[i]]
        levels = [L for L in state.knowledge.space.levels[(w, tp)]
                  if b.lo < L <= b.hi and state.undecided(Cell(w, tp, L), max_runs, verdict)]
        if levels and len(picks) < n:
            picks.append(Cell(w, tp, bisection_level(levels)))
    return picks


class Bisection(Strategy):
    """Bisect every configuration's SLO capacity; done when every bound is resolved."""

    name: ClassVar[str] = "bisection"
    Args: ClassVar[type[StrategyArgs]] = BisectionArgs

    def propose(self, state: ProfilingState, n: int = 1) -> list[Cell]:
        knowledge = state.knowledge
        return bisect_all(state, knowledge.bounds(), knowledge.verdict, max(n, 0), self.args.max_runs_per_cell)


def keeps_up(m: Measurement, load_rps: float, saturation_tol: float) -> bool | None:
    """Throughput-only judgement of one run; None when it failed. An aborted run did not keep up."""
    if m.status is Status.FAILED:
        return None
    if m.status is Status.ABORTED_INFEASIBLE:
        return False
    return m.metric("request_throughput") >= (1.0 - saturation_tol) * load_rps


def capacity_verdict(runs: Iterable[Measurement], load_rps: float, saturation_tol: float) -> Verdict:
    usable = [o for o in (keeps_up(m, load_rps, saturation_tol) for m in runs) if o is not None]
    if not usable:
        return Verdict.UNMEASURED
    return Verdict.FEASIBLE if all(usable) else Verdict.INFEASIBLE


def _capacity_bounds(spec: FleetSpec, space: CellSpace, runs: Mapping[Cell, list[Measurement]]) -> dict[Config, CapacityBounds]:
    out = {}
    for (w, tp), levels in space.levels.items():
        verdicts = {L: capacity_verdict(runs.get(Cell(w, tp, L), ()), L, spec.saturation_tol) for L in levels}
        out[(w, tp)] = bounds_for_levels(levels, verdicts)
    return out


def capacity_only_capacities(spec: FleetSpec, space: CellSpace, measurements: Iterable[Measurement]) -> dict[Config, float]:
    """Saturation capacity per configuration (requests/s per replica), ignoring latency SLOs.

    It is the proven lower bound of the throughput-only bounds: on a full grid, the highest
    level with every level up to it keeping up with its offered load.
    """
    runs: dict[Cell, list[Measurement]] = {}
    for m in measurements:
        runs.setdefault(m.cell, []).append(m)
    return {cfg: b.lo for cfg, b in _capacity_bounds(spec, space, runs).items()}


class CapacityOnly(Strategy):
    """Bisect every configuration's saturation capacity, ignoring tail latency."""

    name: ClassVar[str] = "capacity-only"
    Args: ClassVar[type[StrategyArgs]] = BisectionArgs

    def propose(self, state: ProfilingState, n: int = 1) -> list[Cell]:
        k = state.knowledge
        bounds = _capacity_bounds(k.spec, k.space, k.runs)

        def verdict(cell: Cell) -> Verdict:
            return capacity_verdict(k.runs.get(cell, ()), cell.load_rps, k.spec.saturation_tol)

        return bisect_all(state, bounds, verdict, max(n, 0), self.args.max_runs_per_cell)
