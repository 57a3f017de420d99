"""exhaustive and random: every cell once, in the promised order."""

from __future__ import annotations

from fleetsieve.knowledge import Knowledge
from fleetsieve.strategies import ProfilingState, make_strategy

from fleetsieve.model.synthetic import small_world


def full_order(name: str, seed: int) -> list:
    spec, grid, space = small_world(0)
    strategy, revealed, order = make_strategy(name), [], []
    while cells := strategy.propose(ProfilingState(Knowledge(spec, space, revealed), frozenset(), seed), 1):
        order += cells
        revealed.append(grid.runs(cells[0])[0])
    return order


def test_exhaustive_measures_every_cell_cheapest_first():
    _, _, space = small_world(0)
    order = full_order("exhaustive", 0)
    assert sorted(order) == sorted(space.cells())
    costs = [space.cost(c) for c in order]
    assert costs == sorted(costs)


def test_random_is_a_seeded_permutation_of_every_cell():
    _, _, space = small_world(0)
    a, b, c = full_order("random", 1), full_order("random", 1), full_order("random", 2)
    assert sorted(a) == sorted(space.cells())
    assert a == b and a != c


def test_random_batch_is_a_prefix_of_its_order():
    spec, _, space = small_world(0)
    state = ProfilingState(Knowledge(spec, space, []), frozenset(), 3)
    batch = make_strategy("random").propose(state, 5)
    assert batch == full_order("random", 3)[:5]
