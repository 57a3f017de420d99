"""The allocator is exact: hypothesis checks it against brute force on small instances."""

from __future__ import annotations

import itertools
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from fleetsieve.allocate import evaluate, solve
from fleetsieve.records import Assignment

CAPS = st.sampled_from([0.0, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0])  # zeros and ties on purpose
DEMANDS = st.sampled_from([0.5, 1.0, 2.0, 3.0, 4.5])


def _choices(w, tps, caps, budget, mixed):
    if not mixed:
        out = [()]
        for tp in tps:
            out += [((tp, r),) for r in range(1, budget // tp + 1)]
        return out
    ranges = [range(budget // tp + 1) for tp in tps]
    return [tuple((tp, r) for tp, r in zip(tps, rs) if r) for rs in itertools.product(*ranges)
            if sum(tp * r for tp, r in zip(tps, rs)) <= budget]


def brute_force(demands, caps, budget, tps, mixed):
    per_w = [_choices(w, tps, caps, budget, mixed) for w in demands]
    scored = []
    for combo in itertools.product(*per_w):
        gpus = sum(tp * r for parts in combo for tp, r in parts)
        if gpus > budget:
            continue
        assign = {w: tuple(Assignment(tp, r) for tp, r in parts) for w, parts in zip(demands, combo)}
        scored.append(evaluate(demands, assign, caps))
    best_f = max(o.min_fulfilment for o in scored)
    tier = [o for o in scored if o.min_fulfilment >= best_f - 1e-9]
    best_s = max(o.served_rps for o in tier)
    tier = [o for o in tier if o.served_rps >= best_s - 1e-9]
    return best_f, best_s, min(o.gpus_used for o in tier)


@st.composite
def instances(draw, max_budget=8):
    n_w = draw(st.integers(1, 3))
    tps = sorted(draw(st.sets(st.sampled_from([1, 2, 4]), min_size=1, max_size=3)))
    demands = {f"w{i}": draw(DEMANDS) for i in range(n_w)}
    caps = {(w, tp): draw(CAPS) for w in demands for tp in tps}
    return demands, caps, draw(st.integers(1, max_budget)), tps


@settings(max_examples=300, deadline=None)
@given(instances())
def test_single_tp_matches_brute_force(inst):
    demands, caps, budget, tps = inst
    got = solve(demands, caps, budget)
    f, s, g = brute_force(demands, caps, budget, tps, mixed=False)
    assert math.isclose(got.objective.min_fulfilment, f, abs_tol=1e-9)
    assert math.isclose(got.objective.served_rps, s, abs_tol=1e-9)
    assert got.objective.gpus_used == g == got.gpus_used
    assert all(len(parts) <= 1 for parts in got.assignments.values())


@settings(max_examples=150, deadline=None)
@given(instances(max_budget=6))
def test_mixed_matches_brute_force(inst):
    demands, caps, budget, tps = inst
    got = solve(demands, caps, budget, mixed=True)
    f, s, g = brute_force(demands, caps, budget, tps, mixed=True)
    assert math.isclose(got.objective.min_fulfilment, f, abs_tol=1e-9)
    assert math.isclose(got.objective.served_rps, s, abs_tol=1e-9)
    assert got.objective.gpus_used == g


@settings(max_examples=200, deadline=None)
@given(instances())
def test_reported_objective_is_what_the_allocation_reaches(inst):
    demands, caps, budget, _ = inst
    got = solve(demands, caps, budget)
    assert got.gpus_used <= budget
    assert evaluate(demands, got.assignments, caps) == got.objective


@settings(max_examples=200, deadline=None)
@given(instances(), st.floats(0, 1))
def test_fulfilment_floor_maximises_served_among_allocations_reaching_it(inst, floor):
    demands, caps, budget, _ = inst
    plain = solve(demands, caps, budget)
    floored = solve(demands, caps, budget, fulfilment_floor=floor)
    assert floored.objective.served_rps >= plain.objective.served_rps - 1e-9
    assert floored.objective.min_fulfilment >= min(floor, plain.objective.min_fulfilment) - 1e-9


def test_all_zero_capacity_gives_empty_allocation():
    got = solve({"a": 1.0, "b": 2.0}, {("a", 1): 0.0, ("b", 2): 0.0}, 8)
    assert got.objective.min_fulfilment == 0.0 and got.objective.served_rps == 0.0 and got.gpus_used == 0


def test_prefers_fewer_gpus_when_service_ties():
    got = solve({"a": 2.0}, {("a", 1): 1.0, ("a", 2): 2.0, ("a", 4): 2.0}, 8)
    assert got.objective.gpus_used == 2
