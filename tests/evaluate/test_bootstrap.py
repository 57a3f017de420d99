import math

import numpy as np

from fleetsieve.evaluate.bootstrap import bootstrap_ci, saving, saving_vs_random


def test_saving_is_one_minus_the_ratio_of_means():
    assert saving(np.array([1.0, 3.0]), np.array([4.0, 4.0])) == 0.5
    assert math.isnan(saving(np.array([1.0]), np.array([0.0])))


def test_ci_brackets_the_mean_and_is_reproducible():
    rng = np.random.default_rng(0)
    random_costs = rng.uniform(50, 150, 200)
    costs = 0.5 * random_costs * rng.uniform(0.8, 1.2, 200)
    s = saving_vs_random(costs, random_costs, seed=4)
    assert s.ci95[0] < s.mean < s.ci95[1]
    assert 0.4 < s.ci95[0] and s.ci95[1] < 0.6
    assert bootstrap_ci(costs, random_costs, seed=4) == s.ci95
    assert s.fixed_order == 1 - costs[0] / random_costs[0]


def test_pairing_makes_a_constant_ratio_certain():
    random_costs = np.array([10.0, 100.0, 1000.0, 30.0])
    low, high = bootstrap_ci(0.25 * random_costs, random_costs, seed=1)
    assert math.isclose(low, 0.75) and math.isclose(high, 0.75)
