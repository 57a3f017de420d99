"""Whether a decision violates an SLO in truth.

A decision sends each workload's served load (requests/s, as the decision itself computes it)
over its replicas in proportion to the capacity the decision assumed for each, so a single-TP
decision runs every replica at ``served_w / replicas``. That operating load is rounded up to the
next grid level, and the chosen configuration violates its SLO when the true tail there (the
metric averaged over the cell's usable repeats) exceeds the bound. A load above the top level,
or a cell without a usable run, counts as a violation: nothing shows that it holds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

from fleetsieve.evaluate.truth import Config, Truth, level_at_or_above, true_tail
from fleetsieve.records import Allocation, Cell


@dataclass(frozen=True)
class OperatingPoint:
    """One chosen (workload, tp) at its operating load, with the true tail there.

    ``tails`` maps each SLO metric to ``(true value, bound)``, both in ms.
    """

    workload: str
    tp: int
    replicas: int
    load_rps: float
    level_rps: float | None
    tails: Mapping[str, tuple[float, float]]

    @property
    def violated(self) -> bool:
        if self.level_rps is None:
            return True
        return any(math.isnan(value) or value > bound for value, bound in self.tails.values())


def _per_replica_loads(truth: Truth, allocation: Allocation, capacities: Mapping[Config, float]) -> list[tuple[str, int, int, float]]:
    rows = []
    for w, parts in allocation.assignments.items():
        total = sum(a.replicas * capacities.get((w, a.tp), 0.0) for a in parts)
        served = min(truth.demands[w], total)
        for a in parts:
            kappa = capacities.get((w, a.tp), 0.0)
            if a.replicas > 0 and total > 0 and kappa > 0:
                rows.append((w, a.tp, a.replicas, served * kappa / total))
    return rows


def operating_points(truth: Truth, allocation: Allocation, capacities: Mapping[Config, float]) -> list[OperatingPoint]:
    """Every loaded configuration of ``allocation`` (solved on ``capacities``) at its operating load."""
    points = []
    for w, tp, replicas, load in _per_replica_loads(truth, allocation, capacities):
        level = level_at_or_above(truth.space.levels[(w, tp)], load)
        slo = truth.spec.workloads[w].slo
        tails = {k: (true_tail(truth, Cell(w, tp, level), k) if level is not None else math.nan, bound) for k, bound in slo.items()}
        points.append(OperatingPoint(w, tp, replicas, load, level, tails))
    return points


def violates_slo(truth: Truth, allocation: Allocation, capacities: Mapping[Config, float]) -> bool:
    """True when any loaded configuration of the decision misses an SLO in truth."""
    return any(p.violated for p in operating_points(truth, allocation, capacities))
