from evaluate_grids import make_truth, monotone_grid, make_spec

from fleetsieve.evaluate.truth import build_truth, level_at_or_above, same_objective
from fleetsieve.grid import Grid
from fleetsieve.plan import oracle_allocation
from fleetsieve.records import Cell, Measurement, Objective


def test_truth_matches_plan_oracle():
    caps = {("a", 1): 2, ("a", 2): 3, ("b", 1): 1, ("b", 2): 4}
    spec = make_spec({"a": 3.0, "b": 2.0}, [1, 2], 6)
    grid = monotone_grid(caps, 4)
    truth = build_truth(spec, grid)
    assert truth.oracle == oracle_allocation(spec, grid)
    assert truth.capacities[("a", 2)] == 3.0  # levels 1, 2, 3, 4 at TP2; three feasible
    assert truth.exhaustive_gpu_s == grid.total_gpu_seconds
    assert truth.monotone() and truth.max_repeats == 1


def test_non_monotone_truth_is_detected():
    truth = make_truth({("a", 1): 1}, {"a": 1.0}, 2)
    cell = Cell("a", 1, 1.5)
    flipped = [m if m.cell != cell else Measurement(cell, metrics={"request_throughput": 1.5, "p99_e2el_ms": 10.0}, gpu_seconds=100.0)
               for m in truth.grid.measurements]
    assert not build_truth(truth.spec, Grid(tuple(flipped))).monotone()


def test_level_rounding_goes_up():
    assert level_at_or_above([0.5, 1.0, 1.5], 0.6) == 1.0
    assert level_at_or_above([0.5, 1.0, 1.5], 1.0) == 1.0
    assert level_at_or_above([0.5, 1.0, 1.5], 1.6) is None


def test_same_objective_ignores_gpu_count():
    assert same_objective(Objective(1.0, 5.0, 4), Objective(1.0, 5.0, 8))
    assert not same_objective(Objective(1.0, 5.0, 4), Objective(1.0, 4.9, 4))


def test_truth_follows_the_replay_verdict_rule():
    from evaluate_grids import make_truth
    from fleetsieve.evaluate.truth import build_truth
    from fleetsieve.grid import Grid
    from fleetsieve.noise import noise_aware_rule
    from fleetsieve.records import Cell, Measurement

    plain = make_truth({("a", 1): 3}, {"a": 2.0}, 3, repeats=3)
    edge = Cell("a", 1, 1.5)  # its repeats sit just under the SLO: feasible by the plain rule, never confidently
    runs = [Measurement(m.cell, metrics={**m.metrics, "p99_e2el_ms": 29_000.0 + 500 * m.repeat, "p90_e2el_ms": 20_000.0},
                        gpu_seconds=m.gpu_seconds, repeat=m.repeat, num_requests=150, completed=150)
            if m.cell == edge else m for m in plain.grid.measurements]
    grid = Grid(tuple(runs))
    assert build_truth(plain.spec, grid).capacities[("a", 1)] == 1.5
    assert build_truth(plain.spec, grid, noise_aware_rule(settle_after=3)).capacities[("a", 1)] == 1.0
