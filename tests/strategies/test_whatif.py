"""Hypothetical decisions: the memoised decision equals knowledge.decide; outcome bounds are right."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from fleetsieve.knowledge import decide
from fleetsieve.records import CapacityBounds, Cell
from fleetsieve.spec import parse_spec
from fleetsieve.strategies._whatif import DecisionCache, if_feasible, if_infeasible, potential

LEVELS = (0.5, 1.0, 1.5, 2.0, 3.0, 4.5)
TPS = (1, 2, 4)


@st.composite
def specs_and_bounds(draw):
    workloads = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3, unique=True))
    spec = parse_spec({
        "gpu_budget": draw(st.integers(1, 24)), "tp_degrees": list(TPS), "mixed": draw(st.booleans()),
        "workloads": {w: {"demand_rps": draw(st.sampled_from([1.0, 2.5, 4.0, 9.0])), "slo": {"p99_e2el_ms": 30000}} for w in workloads},
        "tolerance": {"fulfilment": draw(st.sampled_from([0.0, 0.01, 0.05])), "served_rps": 0.05},
    })
    bounds = {}
    for w in workloads:
        for tp in TPS:
            i = draw(st.integers(0, len(LEVELS)))
            j = draw(st.integers(i, len(LEVELS)))
            level = lambda k: 0.0 if k == 0 else LEVELS[k - 1] * tp ** 0.8  # noqa: E731
            bounds[(w, tp)] = CapacityBounds(level(i), level(j))
    return spec, bounds


@settings(max_examples=150, deadline=None)
@given(specs_and_bounds())
def test_cached_decision_equals_decide(case):
    spec, bounds = case
    cache = DecisionCache(spec)
    assert cache(bounds) == decide(spec, bounds)
    assert cache(bounds) is cache(dict(bounds))  # memoised on the bounds vector


@settings(max_examples=60, deadline=None)
@given(specs_and_bounds())
def test_potential_is_zero_when_everything_is_resolved(case):
    spec, bounds = case
    resolved = {cfg: CapacityBounds(b.hi, b.hi) for cfg, b in bounds.items()}
    assert potential(spec, DecisionCache(spec)(resolved)) == 0.0


def test_outcome_bounds_follow_monotonicity():
    levels = (1.0, 2.0, 3.0, 4.0)
    bounds = {("a", 1): CapacityBounds(1.0, 4.0)}
    assert if_feasible(bounds, Cell("a", 1, 3.0))[("a", 1)] == CapacityBounds(3.0, 4.0)
    assert if_infeasible(bounds, levels, Cell("a", 1, 3.0))[("a", 1)] == CapacityBounds(1.0, 2.0)
    assert if_infeasible(bounds, levels, Cell("a", 1, 2.0))[("a", 1)] == CapacityBounds(1.0, 1.0)
