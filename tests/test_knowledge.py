"""Monotone bounds and the decision gap: properties over random monotone grids."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from fleetsieve.allocate import evaluate
from fleetsieve.knowledge import CellSpace, Knowledge, bounds_for_levels, true_capacities
from fleetsieve.records import Cell, Measurement, Verdict
from fleetsieve.spec import parse_spec

LEVELS = (0.5, 1.0, 1.5, 2.0, 3.0)


def run(cell: Cell, feasible: bool) -> Measurement:
    metrics = {"request_throughput": cell.load_rps, "p99_e2el_ms": 1000.0 if feasible else 99000.0}
    return Measurement(cell, metrics=metrics, gpu_seconds=cell.tp * 10.0, duration_s=10.0)


@st.composite
def monotone_worlds(draw):
    workloads = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3, unique=True))
    spec = parse_spec({
        "gpu_budget": draw(st.integers(1, 12)), "tp_degrees": [1, 2, 4],
        "workloads": {w: {"demand_rps": draw(st.sampled_from([1.0, 2.0, 4.0, 6.0])), "slo": {"p99_e2el_ms": 30000}} for w in workloads},
    })
    space = CellSpace.from_levels({(w, tp): LEVELS for w in workloads for tp in (1, 2, 4)}, 10.0)
    knee = {cfg: draw(st.integers(0, len(LEVELS))) for cfg in space.levels}
    truth = [run(c, LEVELS.index(c.load_rps) < knee[c.config]) for c in space.cells()]
    revealed = draw(st.lists(st.sampled_from(truth), unique_by=lambda m: m.cell, max_size=len(truth)))
    return spec, space, truth, revealed


@settings(max_examples=150, deadline=None)
@given(monotone_worlds())
def test_bounds_contain_true_capacity(world):
    spec, space, truth, revealed = world
    kappa = true_capacities(spec, space, truth)
    for cfg, b in Knowledge(spec, space, revealed).bounds().items():
        assert b.lo <= kappa[cfg] <= b.hi


@settings(max_examples=150, deadline=None)
@given(monotone_worlds())
def test_certificate_is_sound(world):
    spec, space, truth, revealed = world
    kappa = true_capacities(spec, space, truth)
    demands = {w: wl.demand_rps for w, wl in spec.workloads.items()}
    oracle = Knowledge(spec, space, truth).decision().conservative.objective
    decision = Knowledge(spec, space, revealed).decision()
    real = evaluate(demands, decision.conservative.assignments, kappa)
    assert oracle.min_fulfilment - real.min_fulfilment <= decision.gap.fulfilment + 1e-9
    assert oracle.served_rps - real.served_rps <= decision.gap.served_rps + 1e-9


@settings(max_examples=60, deadline=None)
@given(monotone_worlds())
def test_full_knowledge_closes_the_gap(world):
    spec, space, truth, _ = world
    decision = Knowledge(spec, space, truth).decision()
    assert decision.gap.fulfilment <= 1e-9 and decision.gap.served_rps <= 1e-9 and decision.certified


def test_bounds_from_verdicts():
    v = {1.0: Verdict.FEASIBLE, 3.0: Verdict.INFEASIBLE}
    assert bounds_for_levels([1.0, 2.0, 3.0, 4.0], v) == bounds_for_levels([1.0, 2.0, 3.0, 4.0], {**v, 4.0: Verdict.INFEASIBLE})
    b = bounds_for_levels([1.0, 2.0, 3.0, 4.0], v)
    assert (b.lo, b.hi) == (1.0, 2.0)
    assert bounds_for_levels([1.0, 2.0], {}) == bounds_for_levels([1.0, 2.0], {2.0: Verdict.INDETERMINATE})
    assert (bounds_for_levels([1.0, 2.0], {1.0: Verdict.INFEASIBLE}).hi) == 0.0


def test_throughput_below_load_is_infeasible():
    spec = parse_spec({"gpu_budget": 4, "workloads": {"a": {"demand_rps": 1.0, "slo": {"p99_e2el_ms": 30000}}}})
    space = CellSpace.from_levels({("a", 1): (1.0,)}, 10.0)
    cell = Cell("a", 1, 1.0)
    lagging = Measurement(cell, metrics={"request_throughput": 0.9, "p99_e2el_ms": 10.0})
    assert Knowledge(spec, space, [lagging]).verdict(cell) is Verdict.INFEASIBLE
    keeping_up = Measurement(cell, metrics={"request_throughput": 0.96, "p99_e2el_ms": 10.0})
    assert Knowledge(spec, space, [keeping_up]).verdict(cell) is Verdict.FEASIBLE
