"""Wrong-decision loss: what deciding from too little (or the wrong) evidence costs in truth.

* Sparse random profiles: cells revealed in a uniformly random order (one run each, the
  order's repeat) until the next would exceed 10/20/30% of the exhaustive cost; the decision is
  the conservative allocation of what was seen.
* Capacity-only: the allocation solved on saturation capacities (the largest level whose
  throughput keeps up, ignoring tail latency), with its chosen configurations' true tails.

Loss is against the oracle: served req/s, and max-min fulfilment in percentage points.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from statistics import fmean
from typing import Mapping

from fleetsieve.allocate import solve
from fleetsieve.evaluate.experiment import order_seed
from fleetsieve.evaluate.replay import Revealer
from fleetsieve.evaluate.slo import OperatingPoint, operating_points
from fleetsieve.evaluate.truth import Config, Truth
from fleetsieve.knowledge import Knowledge, VerdictRule, all_repeats_rule
from fleetsieve.records import Allocation, Measurement, Objective
from fleetsieve.strategies.bisection import capacity_only_capacities

SPARSE_FRACTIONS = (0.1, 0.2, 0.3)


@dataclass(frozen=True)
class Loss:
    """Loss against the oracle (served req/s; fulfilment in percentage points); means over orders."""

    label: str
    served_rps: float
    fulfilment_pp: float
    max_served_rps: float
    max_fulfilment_pp: float
    slo_violation_rate: float


@dataclass(frozen=True)
class CapacityOnlyDecision:
    """The allocation a capacity-only model would choose, and where it really lands."""

    capacities: Mapping[Config, float]
    allocation: Allocation
    true_objective: Objective
    points: tuple[OperatingPoint, ...]
    loss: Loss


def _loss_of(truth: Truth, objective: Objective) -> tuple[float, float]:
    oracle = truth.oracle.objective
    return max(0.0, oracle.served_rps - objective.served_rps), max(0.0, 100.0 * (oracle.min_fulfilment - objective.min_fulfilment))


def _sparse_profile(truth: Truth, budget_gpu_s: float, seed: int) -> list[Measurement]:
    cells = truth.space.cells()
    random.Random(seed).shuffle(cells)
    revealer, seen, spent = Revealer(truth, seed), [], 0.0
    for cell in cells:
        if spent + truth.space.cost(cell) > budget_gpu_s:
            break
        seen.append(revealer.reveal(cell))
        spent += truth.space.cost(cell)
    return seen


def sparse_random_loss(truth: Truth, fraction: float, orders: int, seed: int, rule: VerdictRule = all_repeats_rule) -> Loss:
    """Mean and worst loss of deciding after ``fraction`` of the exhaustive cost, over orders."""
    losses, violations = [], 0
    for order in range(orders):
        knowledge = Knowledge(truth.spec, truth.space, _sparse_profile(truth, fraction * truth.exhaustive_gpu_s, order_seed(seed, order)), rule)
        bounds = knowledge.bounds()
        decision = solve(truth.demands, {c: b.lo for c, b in bounds.items()}, truth.spec.gpu_budget, mixed=truth.spec.mixed)
        losses.append(_loss_of(truth, truth.true_objective(decision.assignments)))
        points = operating_points(truth, decision, {c: b.lo for c, b in bounds.items()})
        violations += any(p.violated for p in points)
    served, pp = zip(*losses)
    return Loss(f"random @ {fraction:.0%} of exhaustive", fmean(served), fmean(pp), max(served), max(pp), violations / orders)


def saturation_capacities(truth: Truth) -> dict[Config, float]:
    """Per configuration, the largest level that keeps up, with every lower level keeping up too
    (the ``capacity-only`` strategy's reading of the full grid)."""
    return capacity_only_capacities(truth.spec, truth.space, truth.grid.measurements)


def capacity_only_decision(truth: Truth) -> CapacityOnlyDecision:
    """What capacity-only sizing chooses on the full grid, its true objective and true tails."""
    kappa = saturation_capacities(truth)
    allocation = solve(truth.demands, kappa, truth.spec.gpu_budget, mixed=truth.spec.mixed)
    objective = truth.true_objective(allocation.assignments)
    points = tuple(operating_points(truth, allocation, kappa))
    served, pp = _loss_of(truth, objective)
    loss = Loss("capacity-only", served, pp, served, pp, float(any(p.violated for p in points)))
    return CapacityOnlyDecision(kappa, allocation, objective, points, loss)
