"""From per-level feasibility probabilities to a distribution of one configuration's capacity."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from fleetsieve.records import CapacityBounds


@dataclass(frozen=True)
class CapacityDistribution:
    """``P(kappa = values[i]) = probs[i]``; ``values[0]`` is 0 (not even the first level is feasible)."""

    values: np.ndarray
    probs: np.ndarray

    def prob_at_least(self, load: float) -> float:
        """P(kappa >= load): the probability that the cell at ``load`` is feasible."""
        return float(self.probs[self.values >= load - 1e-12].sum())

    def sample(self, rng: np.random.Generator) -> float:
        return float(self.values[int(rng.choice(len(self.values), p=self.probs))])


def capacity_distribution(levels: Sequence[float], p_feasible: Sequence[float], bounds: CapacityBounds,
                          prior_mix: float = 0.0) -> CapacityDistribution:
    """The capacity's distribution given per-level P(feasible) and the proven bounds.

    Monotonicity is imposed with a running minimum; levels at or below ``lo`` are certain, levels
    above ``hi`` impossible. ``prior_mix`` blends in a uniform distribution over the values the
    bounds allow, so an overconfident model cannot rule a value out.
    """
    lv = np.asarray(levels, dtype=float)
    p = np.minimum.accumulate(np.clip(np.asarray(p_feasible, dtype=float), 0.0, 1.0))
    p = np.where(lv <= bounds.lo, 1.0, np.where(lv > bounds.hi, 0.0, p))
    p = np.minimum.accumulate(p)
    values = np.concatenate([[0.0], lv])
    probs = np.concatenate([[1.0], p]) - np.concatenate([p, [0.0]])
    allowed = (values >= bounds.lo) & (values <= bounds.hi)
    probs = np.where(allowed, np.clip(probs, 0.0, None), 0.0)
    probs = probs / probs.sum() if probs.sum() > 0 else allowed / allowed.sum()
    if prior_mix > 0:
        probs = (1 - prior_mix) * probs + prior_mix * allowed / allowed.sum()
    return CapacityDistribution(values, probs)
