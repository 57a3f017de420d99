"""The joint capacity/tail model: pooling beats no pooling on held-out cells; intervals cover."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

from fleetsieve.model import JointTailModel
from fleetsieve.model.synthetic import make_world
from fleetsieve.records import Cell, Measurement, Status

METRIC = "p99_e2el_ms"


def split(seed: int, train_fraction: float):
    world = make_world(seed, noise_sd=0.05)
    rng = np.random.default_rng(seed)
    mask = rng.random(len(world.runs)) < train_fraction
    train = [m for m, keep in zip(world.runs, mask) if keep]
    test = [m for m, keep in zip(world.runs, mask) if not keep
            and m.metric("request_throughput") >= 0.95 * m.cell.load_rps]
    slo = {w: spec["slo"] for w, spec in world.spec["workloads"].items()}
    return world, train, test, slo


def log_errors(model: JointTailModel, test: list[Measurement]) -> np.ndarray:
    pred = model.predict([m.cell for m in test])
    j = pred.metrics.index(METRIC)
    return np.abs(pred.log_mean[:, j] - np.log([m.metric(METRIC) for m in test]))


def no_pooling_errors(train, test, slo) -> np.ndarray:
    """Baseline: the same model fitted to each (workload, tp) on its own data only."""
    errors = []
    for cfg in sorted({m.cell.config for m in test}):
        own = [m for m in train if m.cell.config == cfg]
        model = JointTailModel().fit(own, slo={cfg[0]: slo[cfg[0]]}, tps=[cfg[1]])
        errors.append(log_errors(model, [m for m in test if m.cell.config == cfg]))
    return np.concatenate(errors)


@pytest.mark.parametrize("seed", range(3))
def test_pooling_predicts_held_out_cells_better_than_no_pooling(seed):
    _, train, test, slo = split(seed, 0.25)
    joint = JointTailModel().fit(train, slo=slo, tps=[1, 2, 4, 8])
    assert np.mean(log_errors(joint, test)) < 0.8 * np.mean(no_pooling_errors(train, test, slo))


def test_predictive_intervals_cover():
    hits, total = 0, 0
    for seed in range(4):
        _, train, test, slo = split(seed, 0.4)
        pred = JointTailModel().fit(train, slo=slo, tps=[1, 2, 4, 8]).predict([m.cell for m in test])
        y = np.array([m.metric(METRIC) for m in test])
        inside = (pred.quantile(METRIC, 0.05) <= y) & (y <= pred.quantile(METRIC, 0.95))
        hits, total = hits + int(inside.sum()), total + len(y)
    assert 0.75 <= hits / total <= 0.99


def test_saturation_rate_is_learnt_across_tp_degrees():
    world, train, _, slo = split(1, 0.5)
    cells = [Cell(w, tp, 1.0) for (w, tp) in sorted(world.saturation_rps)]
    pred = JointTailModel().fit(train, slo=slo, tps=[1, 2, 4, 8]).predict(cells)
    truth = np.log([world.saturation_rps[c.config] for c in cells])
    assert np.median(np.abs(pred.log_mu_mean - truth)) < 0.15
    lo, hi = pred.saturation_quantile(0.025), pred.saturation_quantile(0.975)
    assert np.mean((lo <= np.exp(truth)) & (np.exp(truth) <= hi)) >= 0.75


def test_feasibility_probability_falls_with_load_and_separates_the_grid():
    world, train, _, slo = split(2, 0.3)
    model = JointTailModel().fit(train, slo=slo, tps=[1, 2, 4, 8])
    for cfg in sorted(world.saturation_rps)[:4]:
        cells = [m.cell for m in world.runs if m.cell.config == cfg]
        p = model.predict(cells).p_feasible()
        assert np.all(np.diff(p) <= 1e-9)
    cells = [m.cell for m in world.runs]
    feasible = np.array([all(m.metric(k) <= v for k, v in slo[m.cell.workload].items())
                         and m.metric("request_throughput") >= 0.95 * m.cell.load_rps for m in world.runs])
    p = model.predict(cells).p_feasible()
    assert p[feasible].mean() > 0.7 and p[~feasible].mean() < 0.3


def test_censored_aborted_runs_pull_predictions_over_the_slo():
    slo = {"chat": {METRIC: 30000.0}}
    ok = [Measurement(Cell("chat", 1, L), metrics={METRIC: 1000.0 * (1 + L), "request_throughput": L}) for L in (0.5, 1.0)]
    aborted = [Measurement(Cell("chat", 1, 1.2), status=Status.ABORTED_INFEASIBLE)]
    plain = JointTailModel().fit(ok, slo=slo).predict([Cell("chat", 1, 1.2)])
    censored = JointTailModel().fit(ok + aborted, slo=slo).predict([Cell("chat", 1, 1.2)])
    assert censored.p_feasible()[0] < plain.p_feasible()[0]
    assert censored.p_feasible()[0] < 0.5


def test_estimator_discipline():
    params = inspect.signature(JointTailModel.__init__).parameters
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for name, p in params.items() if name != "self")
    model = JointTailModel(latency_sd=0.2)
    assert not [k for k in vars(model) if k.endswith("_")]
    _, train, test, slo = split(0, 0.3)
    assert model.fit(train, slo=slo) is model
    assert {"theta_", "cov_", "sigma_"} <= {k for k in vars(model) if k.endswith("_")}
    pred = model.predict([m.cell for m in test[:5]])
    assert np.all(pred.quantile(METRIC, 0.1) < pred.quantile(METRIC, 0.9))
    assert not math.isnan(float(pred.log_sd.sum()))


def test_prediction_is_deterministic():
    _, train, test, slo = split(0, 0.3)
    a = JointTailModel().fit(train, slo=slo).predict([m.cell for m in test]).p_feasible()
    b = JointTailModel().fit(train, slo=slo).predict([m.cell for m in test]).p_feasible()
    assert np.array_equal(a, b)


def test_a_margin_under_the_slo_lowers_the_chance_of_showing_feasibility():
    world, train, _, slo = split(2, 0.3)
    model = JointTailModel().fit(train, slo=slo, tps=[1, 2, 4, 8])
    cells = [m.cell for m in world.runs]
    plain, strict = model.predict(cells).p_feasible(), model.predict(cells, slo_margin=0.8).p_feasible()
    assert np.all(strict <= plain + 1e-12) and strict.mean() < plain.mean()
