"""What is known from a partial grid: per-cell verdicts, monotone capacity bounds, the decision.

Assumption: for a fixed (workload, tp), SLO feasibility is monotone in the offered load. A
feasible verdict at level L then proves every lower level feasible, and an infeasible verdict
proves every higher level infeasible. From the verdicts so far each capacity ``kappa`` is
bounded by ``lo`` (highest proven-feasible level below the lowest proven-infeasible one, or 0)
and ``hi`` (highest level below the lowest proven-infeasible one, or the top level).

The conservative allocation is solved on ``lo`` (its objective is guaranteed); the optimistic
bound is solved on ``hi`` (nothing can beat it). Their difference is the decision gap.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, Sequence

from fleetsieve.allocate import max_min_fulfilment, solve, workload_options
from fleetsieve.records import CapacityBounds, Cell, Decision, Gap, Measurement, Objective, Status, Verdict
from fleetsieve.spec import FleetSpec

Config = tuple[str, int]
#: Decides a cell's verdict from all of its measured runs.
VerdictRule = Callable[[Sequence[Measurement], Mapping[str, float], float, float], Verdict]


def run_feasible(m: Measurement, slo: Mapping[str, float], load_rps: float, saturation_tol: float) -> bool | None:
    """Whether one run meets every SLO and keeps up with the offered load; None if it failed."""
    if m.status is Status.FAILED:
        return None
    if m.status is Status.ABORTED_INFEASIBLE:
        return False
    if m.metric("request_throughput") < (1.0 - saturation_tol) * load_rps:
        return False
    return all(m.metric(key) <= bound for key, bound in slo.items())


def all_repeats_rule(runs: Sequence[Measurement], slo: Mapping[str, float], load_rps: float, saturation_tol: float) -> Verdict:
    """Plain rule: a cell is feasible when all its usable repeats are, infeasible when any is not."""
    outcomes = [run_feasible(m, slo, load_rps, saturation_tol) for m in runs]
    usable = [o for o in outcomes if o is not None]
    if not usable:
        return Verdict.UNMEASURED
    return Verdict.FEASIBLE if all(usable) else Verdict.INFEASIBLE


@dataclass(frozen=True)
class CellSpace:
    """The cells a campaign may measure, with what each is expected to cost (GPU-seconds)."""

    levels: Mapping[Config, tuple[float, ...]]
    cost_gpu_s: Mapping[Cell, float] = field(default_factory=dict)

    def cells(self) -> list[Cell]:
        return [Cell(w, tp, load) for (w, tp), loads in sorted(self.levels.items()) for load in loads]

    def cost(self, cell: Cell) -> float:
        return self.cost_gpu_s.get(cell, cell.tp * 300.0)

    @classmethod
    def from_levels(cls, levels: Mapping[Config, Iterable[float]], duration_s: float) -> "CellSpace":
        """Cells with a fixed run duration, costing ``tp * duration_s`` each."""
        lv = {cfg: tuple(sorted(set(loads))) for cfg, loads in levels.items()}
        costs = {Cell(w, tp, load): tp * duration_s for (w, tp), loads in lv.items() for load in loads}
        return cls(lv, costs)


def bounds_for_levels(levels: Sequence[float], verdicts: Mapping[float, Verdict]) -> CapacityBounds:
    """Monotone bounds on one configuration's capacity from its per-level verdicts."""
    infeasible = [L for L in levels if verdicts.get(L) is Verdict.INFEASIBLE]
    ceiling = min(infeasible) if infeasible else float("inf")
    below = [L for L in levels if L < ceiling]
    hi = max(below, default=0.0)
    lo = max((L for L in below if verdicts.get(L) is Verdict.FEASIBLE), default=0.0)
    return CapacityBounds(lo, hi)


class Knowledge:
    """Verdicts, bounds and the decision, derived from a spec, a cell space and measurements."""

    def __init__(self, spec: FleetSpec, space: CellSpace, measurements: Iterable[Measurement] = (),
                 verdict_rule: VerdictRule = all_repeats_rule) -> None:
        self.spec, self.space, self.verdict_rule = spec, space, verdict_rule
        self.runs: dict[Cell, list[Measurement]] = {}
        for m in measurements:
            self.runs.setdefault(m.cell, []).append(m)

    def with_measurements(self, extra: Iterable[Measurement]) -> "Knowledge":
        """A new Knowledge with ``extra`` measurements added (the original is unchanged)."""
        return Knowledge(self.spec, self.space, [m for ms in self.runs.values() for m in ms] + list(extra), self.verdict_rule)

    def verdict(self, cell: Cell) -> Verdict:
        runs = self.runs.get(cell)
        if not runs:
            return Verdict.UNMEASURED
        wl = self.spec.workloads[cell.workload]
        return self.verdict_rule(runs, wl.slo, cell.load_rps, self.spec.saturation_tol)

    def bounds(self) -> dict[Config, CapacityBounds]:
        out = {}
        for (w, tp), levels in self.space.levels.items():
            verdicts = {L: self.verdict(Cell(w, tp, L)) for L in levels}
            out[(w, tp)] = bounds_for_levels(levels, verdicts)
        return out

    def decision(self) -> Decision:
        return decide(self.spec, self.bounds())

    @property
    def gpu_seconds_spent(self) -> float:
        return sum(m.gpu_seconds for ms in self.runs.values() for m in ms)


def _demands(spec: FleetSpec) -> dict[str, float]:
    return {w: wl.demand_rps for w, wl in spec.workloads.items()}


def optimistic_bound(spec: FleetSpec, hi: Mapping[Config, float], fulfilment_floor: float) -> Objective:
    """An upper bound on the oracle: best fulfilment on ``hi``, and the most served requests/s on
    ``hi`` among allocations reaching ``fulfilment_floor`` (a proven lower bound on the oracle's
    fulfilment), so the served bound holds even when the oracle's fulfilment is below ``hi``'s."""
    demands = _demands(spec)
    table = {w: workload_options(d, {tp: k for (ww, tp), k in hi.items() if ww == w}, spec.gpu_budget, spec.mixed)
             for w, d in demands.items()}
    best_f = max_min_fulfilment(table, demands, spec.gpu_budget)
    served = solve(demands, hi, spec.gpu_budget, mixed=spec.mixed, fulfilment_floor=fulfilment_floor)
    return Objective(best_f, served.objective.served_rps, served.objective.gpus_used)


def decide(spec: FleetSpec, bounds: Mapping[Config, CapacityBounds]) -> Decision:
    """Conservative allocation, optimistic bound, gap, and whether the gap is within tolerance."""
    lo = {cfg: b.lo for cfg, b in bounds.items()}
    hi = {cfg: b.hi for cfg, b in bounds.items()}
    conservative = solve(_demands(spec), lo, spec.gpu_budget, mixed=spec.mixed)
    optimistic = optimistic_bound(spec, hi, conservative.objective.min_fulfilment)
    gap = Gap(
        max(0.0, optimistic.min_fulfilment - conservative.objective.min_fulfilment),
        max(0.0, optimistic.served_rps - conservative.objective.served_rps),
    )
    tol = spec.tolerance
    return Decision(conservative, optimistic, gap, gap.within(tol.fulfilment, tol.served_rps))


def true_capacities(spec: FleetSpec, space: CellSpace, full: Iterable[Measurement],
                    verdict_rule: VerdictRule = all_repeats_rule) -> dict[Config, float]:
    """The oracle capacities: the largest level with every level at or below it feasible."""
    knowledge = Knowledge(spec, space, full, verdict_rule)
    out = {}
    for (w, tp), levels in space.levels.items():
        kappa = 0.0
        for L in levels:
            if knowledge.verdict(Cell(w, tp, L)) is not Verdict.FEASIBLE:
                break
            kappa = L
        out[(w, tp)] = kappa
    return out
