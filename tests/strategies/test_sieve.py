"""sieve: proposes only decision-relevant cells, stops exactly when certified, is sound, saves cost."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetsieve.allocate import evaluate
from fleetsieve.knowledge import CellSpace, Knowledge, true_capacities
from fleetsieve.records import Cell, Measurement
from fleetsieve.spec import parse_spec
from fleetsieve.strategies import ProfilingState, make_strategy
from fleetsieve.strategies._common import open_levels, unresolved
from fleetsieve.strategies._whatif import decision_relevant, moves

from fleetsieve.model.synthetic import small_world

LEVELS = (0.5, 1.0, 1.5, 2.0, 3.0)


def run(cell: Cell, feasible: bool) -> Measurement:
    metrics = {"request_throughput": cell.load_rps, "p99_e2el_ms": 1000.0 + 9000 * cell.load_rps if feasible else 99000.0}
    return Measurement(cell, metrics=metrics, gpu_seconds=cell.tp * 10.0, duration_s=10.0, num_requests=100, completed=100)


@st.composite
def monotone_worlds(draw):
    workloads = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3, unique=True))
    spec = parse_spec({
        "gpu_budget": draw(st.integers(1, 12)), "tp_degrees": [1, 2, 4],
        "workloads": {w: {"demand_rps": draw(st.sampled_from([1.0, 2.0, 4.0, 6.0])), "slo": {"p99_e2el_ms": 30000}} for w in workloads},
        "tolerance": {"fulfilment": draw(st.sampled_from([0.0, 0.01])), "served_rps": 0.05},
    })
    space = CellSpace.from_levels({(w, tp): LEVELS for w in workloads for tp in (1, 2, 4)}, 10.0)
    knee = {cfg: draw(st.integers(0, len(LEVELS))) for cfg in space.levels}
    truth = [run(c, LEVELS.index(c.load_rps) < knee[c.config]) for c in space.cells()]
    revealed = draw(st.lists(st.sampled_from(truth), unique_by=lambda m: m.cell, max_size=len(truth)))
    return spec, space, truth, revealed, draw(st.integers(0, 2**16))


def open_cells(knowledge: Knowledge) -> list[Cell]:
    state, bounds = ProfilingState(knowledge, frozenset(), 0), knowledge.bounds()
    return [Cell(*cfg, L) for cfg in unresolved(bounds) for L in open_levels(state, cfg, bounds[cfg], 3)]


def batch_moves_decision(knowledge: Knowledge, cells: list[Cell]) -> bool:
    """Whether all of ``cells`` coming out feasible (or all infeasible) together moves the decision."""
    now = knowledge.decision()
    feasible = knowledge.with_measurements(run(c, True) for c in cells)
    infeasible = knowledge.with_measurements(run(c, False) for c in cells)
    return moves(now, feasible.decision()) or moves(now, infeasible.decision())


@settings(max_examples=120, deadline=None)
@given(monotone_worlds())
def test_never_proposes_a_cell_whose_outcome_cannot_change_the_decision(world):
    spec, space, _, revealed, seed = world
    knowledge = Knowledge(spec, space, revealed)
    cells = make_strategy("sieve", {"confirm_runs": 0}).propose(ProfilingState(knowledge, frozenset(), seed), 3)
    assert (cells == []) == knowledge.decision().certified
    if any(decision_relevant(knowledge, c) for c in open_cells(knowledge)):
        assert all(decision_relevant(knowledge, c) for c in cells)
    elif cells:  # stalled: only a combination of cells can move the decision, and the batch is one
        assert batch_moves_decision(knowledge, cells)


def test_a_stalled_gap_is_attacked_with_cells_that_move_it_together():
    # Found by hypothesis in CI: a and c both have lo = 0, so the max-min fulfilment stays 0 unless
    # both rise; no single cell moves either objective, yet the gap (1.0 fulfilment) is open.
    spec = parse_spec({"gpu_budget": 6, "tp_degrees": [1, 2, 4], "tolerance": {"fulfilment": 0.0, "served_rps": 0.05},
                       "workloads": {w: {"demand_rps": d, "slo": {"p99_e2el_ms": 30000}} for w, d in (("a", 1.0), ("b", 6.0), ("c", 1.0))}})
    space = CellSpace.from_levels({(w, tp): LEVELS for w in "abc" for tp in (1, 2, 4)}, 10.0)
    knowledge = Knowledge(spec, space, [run(Cell("a", 1, 1.5), False), run(Cell("b", 2, 2.0), True)])
    assert not any(decision_relevant(knowledge, c) for c in open_cells(knowledge))
    cells = make_strategy("sieve", {"confirm_runs": 0}).propose(ProfilingState(knowledge, frozenset(), 0), 3)
    assert {c.workload for c in cells} >= {"a", "c"}
    assert batch_moves_decision(knowledge, cells)


@settings(max_examples=40, deadline=None)
@given(monotone_worlds())
def test_replay_ends_certified_and_sound(world):
    spec, space, truth, _, seed = world
    by_cell = {m.cell: m for m in truth}
    kappa = true_capacities(spec, space, truth)
    demands = {w: wl.demand_rps for w, wl in spec.workloads.items()}
    revealed, sieve = [], make_strategy("sieve")
    while cells := sieve.propose(ProfilingState(Knowledge(spec, space, revealed), frozenset(), seed), 1):
        revealed.append(by_cell[cells[0]])
    decision = Knowledge(spec, space, revealed).decision()
    oracle = Knowledge(spec, space, truth).decision().conservative.objective
    real = evaluate(demands, decision.conservative.assignments, kappa)
    assert decision.certified
    assert oracle.min_fulfilment - real.min_fulfilment <= spec.tolerance.fulfilment + 1e-9
    assert oracle.served_rps - real.served_rps <= spec.tolerance.served_rps + 1e-9
    chosen = [(w, a.tp) for w, parts in decision.conservative.assignments.items() for a in parts if a.replicas]
    assert all(kappa[cfg] > 0 for cfg in chosen)  # no SLO-violating configuration is recommended


def cost_to_certificate(name: str, seed: int, world_seed: int) -> float:
    spec, grid, space = small_world(world_seed)
    strategy, revealed = make_strategy(name), []
    knowledge = Knowledge(spec, space, revealed)
    while not knowledge.decision().certified:
        cell = strategy.next_cell(ProfilingState(knowledge, frozenset(), seed))
        revealed.append(grid.runs(cell)[0])
        knowledge = Knowledge(spec, space, revealed)
    return knowledge.gpu_seconds_spent


@pytest.mark.slow
def test_sieve_certifies_for_much_less_than_random():
    sieve = np.mean([cost_to_certificate("sieve", s, w) for s in range(3) for w in range(2)])
    rand = np.mean([cost_to_certificate("random", s, w) for s in range(3) for w in range(2)])
    assert sieve < 0.6 * rand


def test_a_batch_spreads_over_configurations():
    spec, _, space = small_world(0)
    cells = make_strategy("sieve").propose(ProfilingState(Knowledge(spec, space, []), frozenset(), 0), 4)
    assert len(cells) == 4
    assert len({c.config for c in cells}) == 4


def test_the_seed_drives_tie_breaks():
    spec, _, space = small_world(0)
    firsts = {make_strategy("sieve").propose(ProfilingState(Knowledge(spec, space, []), frozenset(), s), 1)[0] for s in range(8)}
    assert len(firsts) > 1


def test_pending_cells_are_left_alone():
    spec, _, space = small_world(1)
    state = ProfilingState(Knowledge(spec, space, []), frozenset(), 0)
    first = make_strategy("sieve").propose(state, 1)
    again = make_strategy("sieve").propose(ProfilingState(state.knowledge, frozenset(first), 0), 1)
    assert again and again[0] not in first


def test_a_cell_of_few_requests_costs_its_repeats_under_the_noise_aware_rule():
    from fleetsieve.noise import noise_aware_rule
    from fleetsieve.strategies.sieve import runs_to_show_feasible

    spec, _, space = small_world(0)
    few = min(space.cells(), key=lambda c: c.load_rps * space.cost(c) / c.tp)  # fewest requests per run
    assert runs_to_show_feasible(Knowledge(spec, space, []), few, 1.0) == 1  # plain rule: one run decides
    noisy = Knowledge(spec, space, [], noise_aware_rule(settle_after=3))
    assert runs_to_show_feasible(noisy, few, 1.0) == 3
    many = Cell(few.workload, few.tp, few.load_rps * 10_000)
    assert runs_to_show_feasible(noisy, many, 1.0) == 1


def test_an_indeterminate_relevant_cell_is_finished_before_a_new_one_is_opened():
    from fleetsieve.noise import noise_aware_rule

    spec, grid, space = small_world(3, repeats=3, noise_sd=0.2)
    rule = noise_aware_rule(settle_after=3)
    checked = 0
    for seed in range(6):
        revealed, sieve = [], make_strategy("sieve", {"confirm_runs": 0})
        while cells := sieve.propose(ProfilingState(Knowledge(spec, space, revealed, rule), frozenset(), seed), 1):
            k = Knowledge(spec, space, revealed, rule)
            unfinished = [c for c in k.runs if k.verdict(c).name == "INDETERMINATE" and decision_relevant(k, c)]
            if unfinished:
                assert cells[0] in unfinished
                checked += 1
            runs = grid.runs(cells[0])
            revealed.append(runs[sum(m.cell == cells[0] for m in revealed) % len(runs)])
    assert checked > 0  # the situation did arise
