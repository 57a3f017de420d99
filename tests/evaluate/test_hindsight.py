import itertools
import math
import random

from evaluate_grids import make_truth
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fleetsieve.evaluate.hindsight import config_options, hindsight_certificate
from fleetsieve.knowledge import Knowledge, decide
from fleetsieve.records import CapacityBounds

N_LEVELS = 3
CONFIGS = [("a", 1), ("a", 2), ("b", 1), ("b", 2)]

grids = st.fixed_dictionaries({
    "caps": st.tuples(*[st.integers(0, N_LEVELS)] * len(CONFIGS)),
    "demand_a": st.sampled_from([0.5, 1.0, 2.0, 3.5]),
    "demand_b": st.sampled_from([0.5, 1.5, 3.0]),
    "budget": st.integers(2, 6),
})


def _truth(g):
    return make_truth(dict(zip(CONFIGS, g["caps"])), {"a": g["demand_a"], "b": g["demand_b"]}, g["budget"], N_LEVELS)


def _brute_force(truth):
    per_config = {cfg: config_options(truth, cfg) for cfg in truth.space.levels}
    best = math.inf
    for combo in itertools.product(*per_config.values()):
        cost = sum(o.cost for o in combo)
        if cost < best and decide(truth.spec, {cfg: CapacityBounds(o.lo, o.hi) for cfg, o in zip(per_config, combo)}).certified:
            best = cost
    return best


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grids)
def test_branch_and_bound_equals_brute_force(g):
    truth = _truth(g)
    result = hindsight_certificate(truth)
    assert result.exact
    assert result.cost_gpu_s == _brute_force(truth)


@settings(max_examples=25, deadline=None)
@given(grids)
def test_hindsight_cells_certify_and_are_paid_for(g):
    truth = _truth(g)
    result = hindsight_certificate(truth)
    runs = [m for c in result.cells for m in truth.grid.runs(c)]
    assert Knowledge(truth.spec, truth.space, runs).decision().certified
    assert sum(truth.space.cost(c) for c in result.cells) == result.cost_gpu_s


@settings(max_examples=30, deadline=None)
@given(grids, st.integers(0, 2**32 - 1))
def test_certificate_is_sound_on_random_partial_profiles(g, seed):
    """Whenever the gap is within tolerance, the recommendation is truly within tolerance of the oracle."""
    truth = _truth(g)
    cells = truth.space.cells()
    rng = random.Random(seed)
    revealed = rng.sample(cells, rng.randint(0, len(cells)))
    decision = Knowledge(truth.spec, truth.space, [truth.grid.runs(c)[0] for c in revealed]).decision()
    if decision.certified:
        true = truth.true_objective(decision.conservative.assignments)
        tol = truth.spec.tolerance
        assert truth.oracle.objective.min_fulfilment - true.min_fulfilment <= tol.fulfilment + 1e-9
        assert truth.oracle.objective.served_rps - true.served_rps <= tol.served_rps + 1e-9


def test_time_out_reports_a_proven_lower_bound():
    caps = {(w, tp): k for (w, tp), k in zip([(w, tp) for w in "abc" for tp in (1, 2, 4)], [2, 3, 1, 4, 2, 5, 3, 1, 2])}
    truth = make_truth(caps, {"a": 3.0, "b": 2.5, "c": 4.0}, 12, n_levels=6)
    exact = hindsight_certificate(truth, time_limit_s=30.0)
    cut = hindsight_certificate(truth, time_limit_s=0.0)
    assert exact.exact
    assert cut.cost_gpu_s <= exact.cost_gpu_s <= cut.best_found_gpu_s
    if not cut.exact:
        assert cut.best_found_gpu_s >= exact.cost_gpu_s
