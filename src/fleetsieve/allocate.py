"""Exact lexicographic allocator.

Given per-replica SLO capacities ``kappa[(workload, tp)]`` (requests/s), demands and a GPU
budget, choose replicas per workload to

1. maximise the minimum fulfilment ``min_w served_w / demand_w``,
2. then maximise total served requests/s,
3. then minimise GPUs used,

where ``served_w = min(demand_w, sum(replicas * kappa))`` and ``sum(replicas * tp) <= budget``.

Why it is exact:

* Each workload's choices are reduced to its *Pareto options* (GPUs, served): an option with
  more GPUs and no more served requests/s can be swapped for its dominator without hurting any
  objective component, so some optimum uses only Pareto options.
* Stage 1: the optimal minimum fulfilment is one of the finitely many option fulfilments. A
  threshold ``f`` is reachable iff the cheapest options reaching ``f`` fit in the budget, which
  is monotone in ``f``; a binary search over the sorted candidates finds the maximum.
* Stage 2: with every workload restricted to options reaching ``f*``, a knapsack dynamic
  program over the exact number of GPUs used maximises total served; the smallest GPU count
  reaching that maximum wins stage 3.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from fleetsieve.records import Allocation, Assignment, Objective

#: Relative slack for float comparisons of fulfilment and served rates.
EPS = 1e-9


@dataclass(frozen=True)
class Option:
    """One Pareto-optimal way to serve a workload: ``gpus`` GPUs serving ``served`` requests/s."""

    gpus: int
    served: float
    parts: tuple[Assignment, ...]


def _pareto(options: list[Option]) -> list[Option]:
    """Keep options whose served rate strictly beats every cheaper-or-equal option."""
    options.sort(key=lambda o: (o.gpus, -o.served, [a.tp for a in o.parts]))
    kept: list[Option] = []
    for opt in options:
        if not kept or opt.served > kept[-1].served + EPS * max(1.0, opt.served):
            kept.append(opt)
    return kept


def _single_tp_options(demand: float, kappas: Mapping[int, float], budget: int) -> list[Option]:
    options = [Option(0, 0.0, ())]
    for tp, kappa in kappas.items():
        if kappa <= 0 or tp > budget:
            continue
        most = min(budget // tp, math.ceil(demand / kappa))
        options += [Option(r * tp, min(demand, r * kappa), (Assignment(tp, r),)) for r in range(1, most + 1)]
    return options


def _mixed_options(demand: float, kappas: Mapping[int, float], budget: int) -> list[Option]:
    """Unbounded knapsack: the most capacity reachable with exactly g GPUs, for every g."""
    usable = sorted((tp, k) for tp, k in kappas.items() if k > 0 and tp <= budget)
    best = [-math.inf] * (budget + 1)
    last_tp = [0] * (budget + 1)
    best[0] = 0.0
    options = [Option(0, 0.0, ())]
    for g in range(1, budget + 1):
        for tp, kappa in usable:
            if tp <= g and best[g - tp] + kappa > best[g] + EPS:
                best[g], last_tp[g] = best[g - tp] + kappa, tp
        if best[g] > -math.inf:
            options.append(Option(g, min(demand, best[g]), _unwind(last_tp, g)))
            if best[g] >= demand:
                break  # more GPUs cannot serve more than the demand
    return options


def _unwind(last_tp: Sequence[int], g: int) -> tuple[Assignment, ...]:
    counts: dict[int, int] = {}
    while g > 0:
        counts[last_tp[g]] = counts.get(last_tp[g], 0) + 1
        g -= last_tp[g]
    return tuple(Assignment(tp, r) for tp, r in sorted(counts.items()))


def workload_options(demand: float, kappas: Mapping[int, float], budget: int, mixed: bool) -> list[Option]:
    """The Pareto options of one workload, ascending in GPUs (and strictly in served)."""
    build = _mixed_options if mixed else _single_tp_options
    return _pareto(build(demand, kappas, budget))


def _cheapest_reaching(options: list[Option], demand: float, f: float) -> int | None:
    """Index of the cheapest option whose fulfilment is at least ``f`` (None if none)."""
    served = [o.served for o in options]
    idx = bisect.bisect_left(served, f * demand - EPS * max(1.0, demand))
    return idx if idx < len(options) else None


def _reachable(table: dict[str, list[Option]], demands: Mapping[str, float], f: float, budget: int) -> bool:
    total = 0
    for w, options in table.items():
        idx = _cheapest_reaching(options, demands[w], f)
        if idx is None:
            return False
        total += options[idx].gpus
    return total <= budget


def max_min_fulfilment(table: dict[str, list[Option]], demands: Mapping[str, float], budget: int) -> float:
    """Stage 1: the largest minimum fulfilment the budget allows."""
    candidates = sorted({min(1.0, o.served / demands[w]) for w, opts in table.items() for o in opts})
    lo, hi = 0, len(candidates) - 1  # candidates[0] == 0.0 is always reachable (zero option)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _reachable(table, demands, candidates[mid], budget):
            lo = mid
        else:
            hi = mid - 1
    return candidates[lo]


def best_served(table: dict[str, list[Option]], budget: int) -> dict[str, Option]:
    """Stages 2 and 3: one option per workload with the most total served req/s within ``budget``
    GPUs, then the fewest GPUs (an exact knapsack over GPU counts)."""
    dp = np.full(budget + 1, -np.inf)
    dp[0] = 0.0
    choices: list[tuple[str, np.ndarray]] = []
    for w, options in table.items():
        new = np.full(budget + 1, -np.inf)
        pick = np.full(budget + 1, -1, dtype=np.int64)
        for k, opt in enumerate(options):
            if opt.gpus > budget:
                break
            cand = dp[: budget + 1 - opt.gpus] + opt.served
            better = cand > new[opt.gpus:] + EPS
            new[opt.gpus:][better] = cand[better]
            pick[opt.gpus:][better] = k
        dp = new
        choices.append((w, pick))
    best = dp.max()
    b = int(np.argmax(dp >= best - EPS * max(1.0, abs(best))))
    return _backtrack(table, choices, b)


def _backtrack(table: dict[str, list[Option]], choices: list[tuple[str, np.ndarray]], b: int) -> dict[str, Option]:
    chosen: dict[str, Option] = {}
    for w, pick in reversed(choices):
        opt = table[w][int(pick[b])]
        chosen[w] = opt
        b -= opt.gpus
    return chosen


def options_reaching(table: dict[str, list[Option]], demands: Mapping[str, float], f: float) -> dict[str, list[Option]]:
    """Each workload's options restricted to those reaching fulfilment ``f`` (empty when none does)."""
    restricted = {}
    for w, options in table.items():
        idx = _cheapest_reaching(options, demands[w], f)
        restricted[w] = options[idx:] if idx is not None else []
    return restricted


def objective_of(demands: Mapping[str, float], served: Mapping[str, float], gpus: int) -> Objective:
    """The objective of an allocation that serves ``served[w]`` requests/s per workload."""
    fulfil = min(min(1.0, served[w] / d) for w, d in demands.items())
    return Objective(fulfil, float(sum(min(served[w], d) for w, d in demands.items())), gpus)


def solve(
    demands: Mapping[str, float],
    capacities: Mapping[tuple[str, int], float],
    budget: int,
    *,
    mixed: bool = False,
    fulfilment_floor: float | None = None,
) -> Allocation:
    """The exact lexicographic optimum.

    ``capacities`` maps (workload, tp) to the per-replica SLO capacity in requests/s (0 or a
    missing key: that TP cannot serve the workload). With ``fulfilment_floor``, stage 1 is
    replaced by that floor: the result maximises served requests/s among allocations whose
    minimum fulfilment reaches it (used for a sound optimistic bound on served requests/s).
    """
    table = {
        w: workload_options(d, {tp: k for (ww, tp), k in capacities.items() if ww == w}, budget, mixed)
        for w, d in demands.items()
    }
    f_star = max_min_fulfilment(table, demands, budget)
    floor = f_star if fulfilment_floor is None else min(fulfilment_floor, f_star)
    chosen = best_served(options_reaching(table, demands, floor), budget)
    assignments = {w: chosen[w].parts for w in demands}
    gpus = sum(o.gpus for o in chosen.values())
    objective = objective_of(demands, {w: o.served for w, o in chosen.items()}, gpus)
    return Allocation(assignments, objective)


def evaluate(
    demands: Mapping[str, float],
    assignments: Mapping[str, Sequence[Assignment]],
    capacities: Mapping[tuple[str, int], float],
) -> Objective:
    """The objective ``assignments`` really reach when the true capacities are ``capacities``."""
    served = {
        w: min(d, sum(a.replicas * capacities.get((w, a.tp), 0.0) for a in assignments.get(w, ())))
        for w, d in demands.items()
    }
    gpus = sum(a.gpus for parts in assignments.values() for a in parts)
    return objective_of(demands, served, gpus)
