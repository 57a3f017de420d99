"""The hindsight-minimal certificate: the cheapest set of cells whose TRUE verdicts make the gap
fall within tolerance. It is the floor no strategy can beat, whatever its luck.

Hindsight assumes one reveal of a cell shows its true verdict (all repeats judged together)
and costs the cell's mean GPU-seconds per run.

Why a choice per configuration suffices: the bounds of a configuration depend only on its
lowest revealed infeasible level ``i`` and the highest revealed feasible level ``f`` below it.
Any revealed set can be cut down to {f, i} with the same bounds and no more cost, so each
configuration picks one option (f or nothing, i or nothing).

The search is an exact branch and bound over these options. A partial choice is pruned when no
completion can certify, using a relaxation that stays valid even though the served-rps gap
is not monotone in what is revealed:

* the fulfilment gap of any completion is at least opt_f(hi_min) - cons_f(lo_max);
* its served gap is at least opt_served(hi_min, floor=cons_f(lo_max))
  - served(lo_max, floor=cons_f(lo_min)),

where lo_max / hi_min / lo_min take, for undecided configurations, the best / best / worst
bound among their remaining options. The same test filters each configuration's options at
the root, and the cheapest remaining option per undecided configuration bounds the cost.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Mapping, Sequence

from fleetsieve.allocate import solve
from fleetsieve.evaluate.truth import Config, Truth
from fleetsieve.knowledge import bounds_for_levels, decide, optimistic_bound
from fleetsieve.records import CapacityBounds, Cell, Verdict


@dataclass(frozen=True)
class Option:
    """One way to bound a configuration: the cells revealed, their cost and the bounds they give."""

    lo: float
    hi: float
    cells: tuple[Cell, ...]
    cost: float


@dataclass(frozen=True)
class HindsightCertificate:
    """The result. When ``exact`` is false, ``cost_gpu_s`` is a proven LOWER BOUND (the search
    ran out of time) and ``best_found_gpu_s`` the cheapest certificate found (an upper bound).
    ``cost_gpu_s`` is NaN when even the full grid does not certify."""

    cost_gpu_s: float
    exact: bool
    best_found_gpu_s: float
    cells: tuple[Cell, ...]
    nodes: int
    seconds: float


def config_options(truth: Truth, cfg: Config) -> list[Option]:
    """Every non-redundant option of one configuration, cheapest first."""
    levels = truth.space.levels[cfg]
    verdict = {L: truth.verdicts[Cell(*cfg, L)] for L in levels}
    feasible = [None] + [L for L in levels if verdict[L] is Verdict.FEASIBLE]
    infeasible = [None] + [L for L in levels if verdict[L] is Verdict.INFEASIBLE]
    options = []
    for f in feasible:
        for i in infeasible:
            if f is not None and i is not None and f > i:
                continue  # f is ignored above i: (nothing, i) gives the same bounds for less
            chosen = [L for L in (f, i) if L is not None]
            b = bounds_for_levels(levels, {L: verdict[L] for L in chosen})
            cells = tuple(Cell(*cfg, L) for L in chosen)
            options.append(Option(b.lo, b.hi, cells, sum(truth.space.cost(c) for c in cells)))
    return sorted(options, key=lambda o: (o.cost, -o.lo, o.hi))


class _Relaxation:
    """The necessary condition for some completion of a partial choice to certify."""

    def __init__(self, truth: Truth) -> None:
        self.spec, self.demands = truth.spec, truth.demands
        self.evaluations = 0

    def _solve(self, kappa: Mapping[Config, float], floor: float | None = None):
        return solve(self.demands, kappa, self.spec.gpu_budget, mixed=self.spec.mixed, fulfilment_floor=floor).objective

    def possible(self, lo_min: Mapping[Config, float], lo_max: Mapping[Config, float], hi_min: Mapping[Config, float]) -> bool:
        self.evaluations += 1
        tol = self.spec.tolerance
        f_max = self._solve(lo_max).min_fulfilment
        opt = optimistic_bound(self.spec, hi_min, f_max)
        if opt.min_fulfilment - f_max > tol.fulfilment + 1e-12:
            return False
        served_ub = self._solve(lo_max, self._solve(lo_min).min_fulfilment).served_rps
        return opt.served_rps - served_ub <= tol.served_rps + 1e-9


def _envelope(domains: Mapping[Config, Sequence[Option]], fixed: Mapping[Config, Option]):
    lo_min, lo_max, hi_min = {}, {}, {}
    for cfg, dom in domains.items():
        opts = [fixed[cfg]] if cfg in fixed else dom
        lo_min[cfg] = min(o.lo for o in opts)
        lo_max[cfg] = max(o.lo for o in opts)
        hi_min[cfg] = min(o.hi for o in opts)
    return lo_min, lo_max, hi_min


def _filter(domains: dict[Config, list[Option]], test: _Relaxation) -> dict[Config, list[Option]]:
    """Drop options no certifying completion can use; repeat until nothing changes."""
    changed = True
    while changed:
        changed = False
        for cfg in domains:
            kept = [o for o in domains[cfg] if test.possible(*_envelope(domains, {cfg: o}))]
            changed |= len(kept) != len(domains[cfg])
            domains[cfg] = kept
    return domains


def _certifies(truth: Truth, choice: Mapping[Config, Option]) -> bool:
    return decide(truth.spec, {cfg: CapacityBounds(o.lo, o.hi) for cfg, o in choice.items()}).certified


def _greedy(truth: Truth, domains: Mapping[Config, list[Option]]) -> dict[Config, Option]:
    """A first certificate: the most informative option everywhere, then cheapen one config at a time."""
    choice = {cfg: min(dom, key=lambda o: (-o.lo, o.hi, o.cost)) for cfg, dom in domains.items()}
    for cfg in sorted(choice, key=lambda c: -choice[c].cost):
        for option in domains[cfg]:
            if option.cost < choice[cfg].cost and _certifies(truth, {**choice, cfg: option}):
                choice[cfg] = option
                break
    return choice


class _Search:
    """Depth-first branch and bound with an explicit stack, so a time-out still leaves a bound."""

    def __init__(self, truth: Truth, domains: dict[Config, list[Option]], deadline: float) -> None:
        self.truth, self.domains, self.deadline = truth, domains, deadline
        self.test = _Relaxation(truth)
        self.order = sorted(domains, key=lambda c: (len(domains[c]), -domains[c][0].cost))
        tail = [min(o.cost for o in domains[c]) for c in self.order] + [0.0]
        self.rest = [sum(tail[k:]) for k in range(len(tail))]
        self.best: dict[Config, Option] = _greedy(truth, domains)
        self.best_cost = sum(o.cost for o in self.best.values())
        self.nodes = 0

    def run(self) -> float:
        """Search; returns the proven lower bound (== best_cost when the search finished)."""
        stack: list[tuple[float, dict[Config, Option]]] = [(0.0, {})]
        while stack:
            if time.monotonic() > self.deadline:
                return min(self.best_cost, min(cost + self.rest[len(fixed)] for cost, fixed in stack))
            cost, fixed = stack.pop()
            self.nodes += 1
            self._expand(cost, fixed, stack)
        return self.best_cost

    def _expand(self, cost: float, fixed: dict[Config, Option], stack: list) -> None:
        depth = len(fixed)
        if cost + self.rest[depth] >= self.best_cost - 1e-9:
            return
        if depth == len(self.order):
            if _certifies(self.truth, fixed):
                self.best, self.best_cost = dict(fixed), cost
            return
        if depth and not self.test.possible(*_envelope(self.domains, fixed)):
            return
        cfg = self.order[depth]
        for option in reversed(self.domains[cfg]):  # cheapest popped first
            stack.append((cost + option.cost, {**fixed, cfg: option}))


def hindsight_certificate(truth: Truth, time_limit_s: float = 60.0) -> HindsightCertificate:
    """The exact cheapest certificate on the true grid, or a proven lower bound after ``time_limit_s``."""
    start = time.monotonic()
    domains = {cfg: config_options(truth, cfg) for cfg in truth.space.levels}
    full = {cfg: min(dom, key=lambda o: (-o.lo, o.hi, o.cost)) for cfg, dom in domains.items()}
    if not _certifies(truth, full):
        return HindsightCertificate(float("nan"), True, float("nan"), (), 0, time.monotonic() - start)
    search = _Search(truth, _filter(domains, _Relaxation(truth)), start + time_limit_s)
    bound = search.run()
    exact = bound >= search.best_cost - 1e-9
    cells = tuple(sorted(c for o in search.best.values() for c in o.cells))
    return HindsightCertificate(search.best_cost if exact else bound, exact, search.best_cost, cells,
                                search.nodes, time.monotonic() - start)
