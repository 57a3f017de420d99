"""The Strategy contract, run over every registered strategy (see strategies/base.py).

Named test_strategy_contract.py because tests/backends/test_contract.py already uses the
plain basename.
"""

from __future__ import annotations

import numpy as np
import pytest

from fleetsieve.knowledge import Knowledge
from fleetsieve.model.synthetic import small_world
from fleetsieve.noise import noise_aware_rule
from fleetsieve.strategies import STRATEGIES, ProfilingState, make_strategy

ALL = sorted(STRATEGIES)


def partial_state(seed: int, fraction: float, pending: int = 2, rule=None) -> ProfilingState:
    spec, grid, space = small_world(seed)
    rng = np.random.default_rng(seed)
    cells = space.cells()
    order = rng.permutation(len(cells))
    revealed = [grid.runs(cells[i])[0] for i in order[: int(fraction * len(cells))]]
    in_flight = frozenset(cells[i] for i in order[int(fraction * len(cells)):][:pending])
    kwargs = {} if rule is None else {"verdict_rule": rule}
    return ProfilingState(Knowledge(spec, space, revealed, **kwargs), in_flight, seed)


STATES = [(s, f) for s in (0, 1) for f in (0.0, 0.15, 0.4)]


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("seed,fraction", STATES)
def test_proposals_are_distinct_open_cells_of_the_space(name, seed, fraction):
    state = partial_state(seed, fraction)
    cells = make_strategy(name).propose(state, 3)
    assert len(cells) <= 3
    assert len(set(cells)) == len(cells)
    assert all(c in set(state.knowledge.space.cells()) for c in cells)
    assert not set(cells) & state.pending


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("seed,fraction", STATES[:3])
def test_deterministic_for_a_given_state(name, seed, fraction):
    state = partial_state(seed, fraction)
    assert make_strategy(name).propose(state, 2) == make_strategy(name).propose(state, 2)


@pytest.mark.parametrize("name", ALL)
def test_zero_requested_gives_nothing(name):
    assert make_strategy(name).propose(partial_state(0, 0.2), 0) == []


@pytest.mark.parametrize("name", ALL)
def test_unknown_argument_is_rejected(name):
    with pytest.raises(Exception, match="extra|Extra"):
        make_strategy(name, {"no_such_arg": 1})


@pytest.mark.parametrize("name", ALL)
def test_campaign_ends_and_next_cell_agrees(name):
    spec, grid, space = small_world(2)
    strategy, revealed = make_strategy(name), []
    for _ in range(len(space.cells()) + 1):
        state = ProfilingState(Knowledge(spec, space, revealed), frozenset(), 5)
        cell = strategy.next_cell(state)
        assert cell == (strategy.propose(state, 1) or [None])[0]
        if cell is None:
            break
        revealed.append(grid.runs(cell)[0])
    assert strategy.next_cell(ProfilingState(Knowledge(spec, space, revealed), frozenset(), 5)) is None


@pytest.mark.parametrize("name", ALL)
def test_never_raises_under_the_noise_rule_with_repeats(name):
    spec, grid, space = small_world(3, repeats=3, noise_sd=0.2)
    rule, revealed = noise_aware_rule(0.95), []
    strategy = make_strategy(name)
    for step in range(40):
        state = ProfilingState(Knowledge(spec, space, revealed, rule), frozenset(), 1)
        cells = strategy.propose(state, 2)
        if not cells:
            break
        revealed += [grid.runs(c)[step % 3] for c in cells]


def test_unknown_strategy_lists_the_available_ones():
    from fleetsieve.errors import InputError

    with pytest.raises(InputError, match="available: .*sieve"):
        make_strategy("nope")
