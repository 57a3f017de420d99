from fleetsieve.evaluate.metrics import outcome_of
from fleetsieve.evaluate.replay import Step, Trace


def _trace(oracle_flags, certified_flags, stopped=True):
    steps = tuple(Step(100.0 * i, None, 1.0, 1.0, o, 0.0, 0.0, c) for i, (o, c) in enumerate(zip(oracle_flags, certified_flags)))
    return Trace("s", 0, steps, 0, oracle_flags[-1], False, stopped, False)


def test_cost_to_oracle_is_when_the_oracle_is_reached_for_good():
    out = outcome_of(_trace([False, True, False, True, True], [False, False, False, True, True]))
    assert out.cost_to_oracle_gpu_s == 300.0 and out.reached_oracle
    assert out.cost_to_certificate_gpu_s == 300.0 and out.certified


def test_oracle_at_step_zero_costs_nothing():
    out = outcome_of(_trace([True, True], [True, True]))
    assert out.cost_to_oracle_gpu_s == 0.0 and out.cost_to_certificate_gpu_s == 0.0


def test_never_reaching_reports_everything_spent_and_flags_it():
    out = outcome_of(_trace([False, True, False], [False, False, False]))
    assert out.cost_to_oracle_gpu_s == 200.0 and not out.reached_oracle
    assert out.cost_to_certificate_gpu_s == 200.0 and not out.certified
    assert out.total_gpu_s == 200.0 and out.reveals == 2
