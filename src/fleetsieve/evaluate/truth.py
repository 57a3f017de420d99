"""The full-grid truth a replay is judged against.

The truth is what exhaustive profiling concludes: every repeat of every cell, judged by the
replay's verdict rule, gives the oracle capacities and the oracle allocation. Under the plain
all-repeats rule this is exactly what ``fleetsieve plan`` reads from the whole grid. Under the
noise-aware rule a cell the full evidence leaves indeterminate is not feasible for the oracle
either: a strategy judged by a stricter rule than its own could never reach its reference.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import fmean
from typing import Mapping, Sequence

from fleetsieve.allocate import EPS, evaluate, solve
from fleetsieve.grid import Grid
from fleetsieve.knowledge import CellSpace, Knowledge, VerdictRule, all_repeats_rule, true_capacities
from fleetsieve.plan import space_from_grid
from fleetsieve.records import Allocation, Assignment, Cell, Objective, Status, Verdict
from fleetsieve.spec import FleetSpec

Config = tuple[str, int]


@dataclass(frozen=True)
class Truth:
    """A spec, its cell space on a grid, and what the full grid says (oracle capacities and decision)."""

    spec: FleetSpec
    grid: Grid
    space: CellSpace
    capacities: Mapping[Config, float]
    oracle: Allocation
    verdicts: Mapping[Cell, Verdict]

    @property
    def demands(self) -> dict[str, float]:
        return {w: wl.demand_rps for w, wl in self.spec.workloads.items()}

    @property
    def exhaustive_gpu_s(self) -> float:
        """What measuring every cell of the space once costs."""
        return sum(self.space.cost(c) for c in self.space.cells())

    @property
    def max_repeats(self) -> int:
        return max(len(self.grid.runs(c)) for c in self.space.cells())

    def true_objective(self, assignments: Mapping[str, Sequence[Assignment]]) -> Objective:
        """The objective ``assignments`` really reach on the oracle capacities."""
        return evaluate(self.demands, assignments, self.capacities)

    def is_oracle(self, objective: Objective) -> bool:
        """True when ``objective`` equals the oracle's (min fulfilment, served req/s)."""
        return same_objective(objective, self.oracle.objective)

    def monotone(self) -> bool:
        """True when, per configuration, no infeasible level lies below a feasible one."""
        for (w, tp), levels in self.space.levels.items():
            seen_infeasible = False
            for L in levels:
                verdict = self.verdicts[Cell(w, tp, L)]
                if verdict is Verdict.FEASIBLE and seen_infeasible:
                    return False
                seen_infeasible = seen_infeasible or verdict is not Verdict.FEASIBLE
        return True


def same_objective(a: Objective, b: Objective) -> bool:
    """Equal max-min fulfilment and served req/s, up to the allocator's float slack."""
    close_f = abs(a.min_fulfilment - b.min_fulfilment) <= EPS
    close_s = abs(a.served_rps - b.served_rps) <= EPS * max(1.0, abs(b.served_rps))
    return close_f and close_s


def build_truth(spec: FleetSpec, grid: Grid, verdict_rule: VerdictRule = all_repeats_rule) -> Truth:
    """The truth for ``spec`` on ``grid`` (raises InputError when the grid cannot answer the spec)."""
    space = space_from_grid(spec, grid)
    full = Knowledge(spec, space, grid.measurements, verdict_rule)
    verdicts = {c: full.verdict(c) for c in space.cells()}
    kappa = true_capacities(spec, space, grid.measurements, verdict_rule)
    demands = {w: wl.demand_rps for w, wl in spec.workloads.items()}
    oracle = solve(demands, kappa, spec.gpu_budget, mixed=spec.mixed)
    return Truth(spec, grid, space, kappa, oracle, verdicts)


def true_tail(truth: Truth, cell: Cell, metric: str) -> float:
    """The cell's metric averaged over its usable repeats (NaN when none reported it)."""
    values = [m.metric(metric) for m in truth.grid.runs(cell) if m.status is Status.OK]
    values = [v for v in values if not math.isnan(v)]
    return fmean(values) if values else math.nan


def level_at_or_above(levels: Sequence[float], load_rps: float) -> float | None:
    """The lowest grid level at or above ``load_rps`` (None when it lies above the top level)."""
    for L in levels:
        if L >= load_rps - EPS * max(1.0, load_rps):
            return L
    return None
