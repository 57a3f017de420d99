"""exhaustive and random: every cell in the promised order; an indeterminate cell is repeated right away."""

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


def test_baselines_repeat_an_indeterminate_cell_right_away_up_to_the_run_limit():
    from fleetsieve.noise import noise_aware_rule
    spec, grid, space = small_world(3, repeats=3, noise_sd=0.2)
    rule = noise_aware_rule(0.95, settle_after=None)
    for name in ("random", "exhaustive"):
        strategy, revealed = make_strategy(name, {"max_runs_per_cell": 2}), []
        while cells := strategy.propose(ProfilingState(Knowledge(spec, space, revealed, rule), frozenset(), 0), 1):
            k = sum(m.cell == cells[0] for m in revealed)
            revealed.append(grid.runs(cells[0])[k % len(grid.runs(cells[0]))])
        counts = {c: sum(m.cell == c for m in revealed) for c in space.cells()}
        knowledge = Knowledge(spec, space, revealed, rule)
        assert set(counts.values()) <= {1, 2}
        assert all(knowledge.verdict(c).name != "INDETERMINATE" or n == 2 for c, n in counts.items())
        repeated = [c for c, n in counts.items() if n == 2]
        assert repeated and all(revealed.index(next(m for m in revealed if m.cell == c)) + 1 ==
                                [i for i, m in enumerate(revealed) if m.cell == c][1] for c in repeated)
