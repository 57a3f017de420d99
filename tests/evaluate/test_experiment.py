from evaluate_grids import SeededShuffle, SpaceOrder, make_truth

from fleetsieve.evaluate.experiment import KEPT_TRACES, order_seed, run_experiment

CAPS = {("a", 1): 2, ("a", 2): 3, ("b", 1): 1, ("b", 2): 4}
FACTORIES = {"shuffle": SeededShuffle, "space": SpaceOrder}


def test_same_seed_same_results_whatever_the_workers():
    truth = make_truth(CAPS, {"a": 3.0, "b": 2.0}, 6)
    serial = run_experiment(truth, FACTORIES, 6, seed=3, workers=1)
    parallel = run_experiment(truth, FACTORIES, 6, seed=3, workers=2)
    assert serial.outcomes == parallel.outcomes
    assert serial.traces == parallel.traces and len(serial.traces["shuffle"]) == KEPT_TRACES


def test_seed_changes_the_orders():
    truth = make_truth(CAPS, {"a": 3.0, "b": 2.0}, 6)
    a = run_experiment(truth, FACTORIES, 6, seed=1, workers=1).costs("shuffle")
    b = run_experiment(truth, FACTORIES, 6, seed=2, workers=1).costs("shuffle")
    assert list(a) != list(b)


def test_orders_are_ticked_and_kept_in_order():
    truth = make_truth(CAPS, {"a": 3.0, "b": 2.0}, 6)
    ticks = []
    exp = run_experiment(truth, FACTORIES, 4, seed=0, workers=2, on_order_done=lambda: ticks.append(1))
    assert len(ticks) == 4 and [o.order for o in exp.outcomes["space"]] == [0, 1, 2, 3]
    assert order_seed(0, 1) != order_seed(0, 2) and order_seed(5, 1) == order_seed(5, 1)
