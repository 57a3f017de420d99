"""Certificate plans certify the decision when the sampled capacities are the truth, irreducibly."""

from __future__ import annotations

import numpy as np
import pytest

from fleetsieve.knowledge import Knowledge, true_capacities
from fleetsieve.strategies._plans import certificate_plan
from fleetsieve.strategies._whatif import DecisionCache

from fleetsieve.model.synthetic import small_world


@pytest.mark.parametrize("seed", range(4))
def test_plan_cells_certify_and_none_is_superfluous(seed):
    spec, grid, space = small_world(seed)
    truth = grid.measurements
    kappa = true_capacities(spec, space, truth)
    rng = np.random.default_rng(seed)
    revealed = [grid.runs(c)[0] for c in space.cells() if rng.random() < 0.15]
    knowledge = Knowledge(spec, space, revealed)
    plan = certificate_plan(DecisionCache(spec), knowledge.bounds(), space.levels, kappa, space.cost, rng)
    assert Knowledge(spec, space, revealed + [grid.runs(c)[0] for c in plan]).decision().certified
    for dropped in plan:
        rest = [grid.runs(c)[0] for c in plan if c != dropped]
        assert not Knowledge(spec, space, revealed + rest).decision().certified


def test_no_plan_needed_once_certified():
    spec, grid, space = small_world(0)
    full = Knowledge(spec, space, grid.measurements)
    kappa = true_capacities(spec, space, grid.measurements)
    rng = np.random.default_rng(0)
    assert certificate_plan(DecisionCache(spec), full.bounds(), space.levels, kappa, space.cost, rng) == []
