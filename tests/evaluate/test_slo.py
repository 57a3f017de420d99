import pytest
from evaluate_grids import make_truth

from fleetsieve.evaluate.slo import operating_points, violates_slo
from fleetsieve.records import Allocation, Assignment, Objective

CAPS = {("a", 1): 2, ("a", 2): 3}


def _alloc(tp, replicas):
    return Allocation({"a": (Assignment(tp, replicas),)}, Objective(1.0, 3.0, tp * replicas))


def test_operating_load_is_served_per_replica_rounded_up_to_a_level():
    truth = make_truth(CAPS, {"a": 2.4}, 8)
    (point,) = operating_points(truth, _alloc(1, 3), {("a", 1): 1.0})
    assert point.load_rps == pytest.approx(0.8) and point.level_rps == 1.0  # 2.4 req/s over 3 replicas
    assert not point.violated


def test_load_above_the_true_capacity_violates():
    truth = make_truth(CAPS, {"a": 3.0}, 8)
    # capacities claimed 1.5 req/s/replica at TP1, but only 0.5 and 1.0 are truly feasible
    assert violates_slo(truth, _alloc(1, 2), {("a", 1): 1.5})
    assert not violates_slo(truth, _alloc(1, 3), {("a", 1): 1.0})
