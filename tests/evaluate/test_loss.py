from evaluate_grids import _run, levels_for, make_spec

from fleetsieve.evaluate.loss import capacity_only_decision, saturation_capacities, sparse_random_loss
from fleetsieve.evaluate.truth import build_truth
from fleetsieve.grid import Grid
from fleetsieve.records import Cell


def _truth_where_throughput_outlasts_the_slo():
    # TP1: SLO-feasible up to 1.0 req/s, keeps up to 2.0; TP2: feasible up to 2.0, keeps up to 2.0.
    runs = []
    for tp, slo_levels, sat_levels in ((1, 2, 4), (2, 2, 2)):
        for k, load in enumerate(levels_for(tp, 4)):
            runs.append(_run(Cell("a", tp, load), k < slo_levels, 0, keeps_up=k < sat_levels))
    return build_truth(make_spec({"a": 4.0}, [1, 2], 4), Grid(tuple(runs)))


def test_capacity_only_picks_a_configuration_that_misses_its_slo():
    truth = _truth_where_throughput_outlasts_the_slo()
    assert saturation_capacities(truth) == {("a", 1): 2.0, ("a", 2): 2.0}
    decision = capacity_only_decision(truth)
    assert decision.allocation.assignments["a"][0].tp == 1
    assert any(p.violated for p in decision.points)
    assert decision.loss.served_rps > 0 and decision.loss.fulfilment_pp > 0
    assert decision.loss.slo_violation_rate == 1.0


def test_sparse_loss_vanishes_with_the_whole_grid_and_is_never_negative():
    truth = _truth_where_throughput_outlasts_the_slo()
    full = sparse_random_loss(truth, 1.0, orders=3, seed=0)
    assert full.served_rps == 0 and full.fulfilment_pp == 0
    sparse = sparse_random_loss(truth, 0.1, orders=5, seed=0)
    assert sparse.served_rps >= 0 and sparse.fulfilment_pp >= 0 and sparse.max_served_rps >= sparse.served_rps
    assert sparse.slo_violation_rate == 0  # decisions on proven bounds never overload in a noise-free grid
