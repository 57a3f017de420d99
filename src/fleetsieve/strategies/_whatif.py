"""Hypothetical decisions: what the decision would be if one cell came out feasible or infeasible.

A cell matters to the decision only when one of its two outcomes moves the conservative
objective or the optimistic bound. Decisions are memoised per bounds vector within one call,
since a proposal evaluates many overlapping hypotheses.

``DecisionCache`` computes exactly what ``knowledge.decide`` computes (a test checks equality on
random bounds) but memoises each workload's Pareto options on that workload's capacities: a
hypothesis changes one configuration, so the other workloads' options are reused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from fleetsieve.allocate import Option, best_served, max_min_fulfilment, objective_of, options_reaching, workload_options
from fleetsieve.knowledge import Config, Knowledge
from fleetsieve.records import Allocation, CapacityBounds, Cell, Decision, Gap, Objective
from fleetsieve.spec import FleetSpec

Bounds = Mapping[Config, CapacityBounds]
#: Smallest tolerance used to normalise a gap, so a zero tolerance does not divide by zero.
TOL_FLOOR = 1e-3


def _key(bounds: Bounds) -> tuple:
    return tuple((cfg, b.lo, b.hi) for cfg, b in sorted(bounds.items()))


class DecisionCache:
    """``knowledge.decide`` memoised on the bounds vector and on each workload's options."""

    def __init__(self, spec: FleetSpec) -> None:
        self.spec = spec
        self.demands = {w: wl.demand_rps for w, wl in spec.workloads.items()}
        self._memo: dict[tuple, Decision] = {}
        self._options: dict[tuple, list[Option]] = {}
        self._stage1: dict[tuple, float] = {}
        self._stage2: dict[tuple, dict[str, Option]] = {}

    def __call__(self, bounds: Bounds) -> Decision:
        key = _key(bounds)
        if key not in self._memo:
            self._memo[key] = self._decide(bounds)
        return self._memo[key]

    def _table(self, caps: Mapping[Config, float]) -> dict[str, list[Option]]:
        table = {}
        for w, d in self.demands.items():
            kappas = {tp: k for (ww, tp), k in sorted(caps.items()) if ww == w}
            key = (w, tuple(kappas.items()))
            if key not in self._options:
                self._options[key] = workload_options(d, kappas, self.spec.gpu_budget, self.spec.mixed)
            table[w] = self._options[key]
        return table

    def _max_min(self, table: dict[str, list[Option]]) -> float:
        key = tuple(id(opts) for opts in table.values())
        if key not in self._stage1:
            self._stage1[key] = max_min_fulfilment(table, self.demands, self.spec.gpu_budget)
        return self._stage1[key]

    def _best(self, table: dict[str, list[Option]], floor: float) -> dict[str, Option]:
        # Stages 2 and 3 of allocate.solve, on a table restricted to fulfilment >= floor.
        restricted = options_reaching(table, self.demands, floor)
        key = tuple((id(table[w]), len(opts)) for w, opts in restricted.items())
        if key not in self._stage2:
            self._stage2[key] = best_served(restricted, self.spec.gpu_budget)
        return self._stage2[key]

    def _decide(self, bounds: Bounds) -> Decision:
        tol = self.spec.tolerance
        lo_table = self._table({cfg: b.lo for cfg, b in bounds.items()})
        chosen = self._best(lo_table, self._max_min(lo_table))
        cons = Allocation({w: chosen[w].parts for w in self.demands},
                          objective_of(self.demands, {w: o.served for w, o in chosen.items()}, sum(o.gpus for o in chosen.values())))
        hi_table = self._table({cfg: b.hi for cfg, b in bounds.items()})
        best_f = self._max_min(hi_table)
        served = self._best(hi_table, min(cons.objective.min_fulfilment, best_f))
        opt = objective_of(self.demands, {w: o.served for w, o in served.items()}, sum(o.gpus for o in served.values()))
        optimistic = Objective(best_f, opt.served_rps, opt.gpus_used)
        gap = Gap(max(0.0, best_f - cons.objective.min_fulfilment), max(0.0, opt.served_rps - cons.objective.served_rps))
        return Decision(cons, optimistic, gap, gap.within(tol.fulfilment, tol.served_rps))


def potential(spec: FleetSpec, decision: Decision) -> float:
    """The decision gap normalised by the tolerance (0 when closed; certified roughly below 2)."""
    tol = spec.tolerance
    return decision.gap.fulfilment / max(tol.fulfilment, TOL_FLOOR) + decision.gap.served_rps / max(tol.served_rps, TOL_FLOOR)


def level_below(levels: tuple[float, ...], load: float) -> float:
    return max((L for L in levels if L < load), default=0.0)


def if_feasible(bounds: Bounds, cell: Cell) -> dict[Config, CapacityBounds]:
    b = bounds[cell.config]
    return {**bounds, cell.config: CapacityBounds(max(b.lo, min(cell.load_rps, b.hi)), b.hi)}


def if_infeasible(bounds: Bounds, levels: tuple[float, ...], cell: Cell) -> dict[Config, CapacityBounds]:
    b = bounds[cell.config]
    hi = min(b.hi, level_below(levels, cell.load_rps))
    return {**bounds, cell.config: CapacityBounds(min(b.lo, hi), hi)}


def _same(a: Objective, b: Objective) -> bool:
    return abs(a.min_fulfilment - b.min_fulfilment) <= 1e-12 and abs(a.served_rps - b.served_rps) <= 1e-9


def moves(before: Decision, after: Decision) -> bool:
    """Whether ``after`` has a different conservative objective or optimistic bound."""
    return not (_same(before.conservative.objective, after.conservative.objective) and _same(before.optimistic, after.optimistic))


@dataclass(frozen=True)
class Outcomes:
    """The decisions after either outcome of one cell."""

    feasible: Decision
    infeasible: Decision

    def relevant(self, now: Decision) -> bool:
        return moves(now, self.feasible) or moves(now, self.infeasible)


def outcomes(cache: DecisionCache, bounds: Bounds, levels: tuple[float, ...], cell: Cell) -> Outcomes:
    return Outcomes(cache(if_feasible(bounds, cell)), cache(if_infeasible(bounds, levels, cell)))


def decision_relevant(knowledge: Knowledge, cell: Cell) -> bool:
    """True when some outcome of measuring ``cell`` moves the conservative or optimistic objective."""
    cache = DecisionCache(knowledge.spec)
    bounds = knowledge.bounds()
    levels = knowledge.space.levels[cell.config]
    return outcomes(cache, bounds, levels, cell).relevant(cache(bounds))
