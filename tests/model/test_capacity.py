"""Capacity distributions: proper, monotone, and faithful to the proven bounds."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetsieve.model import capacity_distribution
from fleetsieve.records import CapacityBounds

LEVELS = (1.0, 2.0, 3.0, 4.0, 5.0)
VALUES = (0.0,) + LEVELS


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=5, max_size=5), st.integers(0, 5), st.integers(0, 5), st.floats(0, 1))
def test_distribution_is_proper_and_within_bounds(p, i, j, mix):
    lo, hi = VALUES[min(i, j)], VALUES[max(i, j)]
    dist = capacity_distribution(LEVELS, p, CapacityBounds(lo, hi), mix)
    assert abs(dist.probs.sum() - 1) < 1e-9
    assert np.all(dist.probs >= 0)
    assert dist.probs[(dist.values < lo) | (dist.values > hi)].sum() == 0
    tail = [dist.prob_at_least(L) for L in LEVELS]
    assert all(a >= b - 1e-12 for a, b in zip(tail, tail[1:]))
    assert all(abs(t - 1.0) < 1e-9 for L, t in zip(LEVELS, tail) if L <= lo)


def test_follows_the_model_when_not_mixed():
    dist = capacity_distribution(LEVELS, [0.9, 0.9, 0.5, 0.1, 0.0], CapacityBounds(0.0, 5.0))
    assert np.allclose(dist.probs, [0.1, 0.0, 0.4, 0.4, 0.1, 0.0])
    assert dist.sample(np.random.default_rng(0)) in VALUES
