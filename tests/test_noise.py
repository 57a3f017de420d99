"""Noise-aware verdicts: confidence-backed claims, indeterminate otherwise, calibrated error rates."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fleetsieve.errors import InputError
from fleetsieve.noise import noise_aware_rule, repeat_interval, run_interval
from fleetsieve.records import Cell, Measurement, Status, Verdict

SLO = {"p99_e2el_ms": 30000.0}
CELL = Cell("chat", 1, 1.0)
RULE = noise_aware_rule(0.95)


def run_from_sample(latencies: np.ndarray, repeat: int = 0, load: float = 1.0) -> Measurement:
    """A run whose summary is computed the way vLLM does (numpy percentiles of the requests)."""
    p50, p90, p99 = np.percentile(latencies, [50, 90, 99])
    metrics = {"p50_e2el_ms": p50, "p90_e2el_ms": p90, "p99_e2el_ms": p99, "mean_e2el_ms": latencies.mean(),
               "request_throughput": load}
    n = len(latencies)
    return Measurement(Cell("chat", 1, load), metrics=metrics, repeat=repeat, num_requests=n, completed=n)


def summary_run(p50: float, p90: float, p99: float, n: int, throughput: float = 1.0) -> Measurement:
    metrics = {"p50_e2el_ms": p50, "p90_e2el_ms": p90, "p99_e2el_ms": p99, "request_throughput": throughput}
    return Measurement(CELL, metrics=metrics, num_requests=n, completed=n)


def test_p90_over_the_slo_proves_the_p99_over_it():
    assert RULE([summary_run(10000, 40000, 50000, n=300)], SLO, 1.0, 0.05) is Verdict.INFEASIBLE


def test_clear_margin_with_many_requests_is_feasible():
    assert RULE([summary_run(5000, 9000, 12000, n=2000)], SLO, 1.0, 0.05) is Verdict.FEASIBLE


def test_p99_just_under_the_slo_from_few_requests_is_indeterminate():
    assert RULE([summary_run(10000, 20000, 29000, n=150)], SLO, 1.0, 0.05) is Verdict.INDETERMINATE


def test_p99_just_over_the_slo_is_not_claimed_infeasible_from_one_run():
    assert RULE([summary_run(10000, 20000, 31000, n=150)], SLO, 1.0, 0.05) is Verdict.INDETERMINATE


def test_tight_repeats_settle_a_cell_near_the_slo():
    runs = [dataclasses.replace(summary_run(10000, 20000, v, n=150), repeat=i) for i, v in enumerate((27000, 27300, 26800, 27100))]
    assert RULE(runs, SLO, 1.0, 0.05) is Verdict.FEASIBLE
    lo, hi = repeat_interval([r.metric("p99_e2el_ms") for r in runs], 0.975)
    assert lo < 27050 < hi < 30000


def test_contradicting_repeats_are_indeterminate():
    runs = [summary_run(5000, 9000, 12000, n=3000), dataclasses.replace(summary_run(10000, 40000, 55000, n=3000), repeat=1)]
    assert RULE(runs, SLO, 1.0, 0.05) is Verdict.INDETERMINATE


def test_aborted_falling_behind_and_failed_runs():
    aborted = Measurement(CELL, status=Status.ABORTED_INFEASIBLE)
    failed = Measurement(CELL, status=Status.FAILED, reason="connection refused")
    assert RULE([aborted], SLO, 1.0, 0.05) is Verdict.INFEASIBLE
    assert RULE([failed], SLO, 1.0, 0.05) is Verdict.UNMEASURED
    assert RULE([summary_run(5000, 9000, 12000, n=2000, throughput=0.5)], SLO, 1.0, 0.05) is Verdict.INFEASIBLE


def test_run_interval_brackets_the_reported_quantile():
    lo, hi = run_interval(summary_run(5000, 9000, 12000, n=2000), "p99_e2el_ms", 0.975)
    assert 9000 < lo < 12000 < hi < 20000  # lo interpolates between p90 and p99 at the lowest plausible rank
    lo50, hi50 = run_interval(summary_run(5000, 9000, 12000, n=2000), "p50_e2el_ms", 0.975)
    assert lo50 == -np.inf and hi50 == 9000


def test_confidence_must_be_sensible():
    with pytest.raises(InputError):
        noise_aware_rule(1.0)


@pytest.mark.parametrize("true_p99_over_slo", [0.85, 0.95, 1.05, 1.2])
def test_wrong_claims_stay_below_the_error_rate(true_p99_over_slo):
    """Log-normal request latencies with a known true p99: wrong claims are rare (<= 5% + slack)."""
    rng = np.random.default_rng(int(true_p99_over_slo * 100))
    sigma, n, trials = 0.8, 400, 300
    mu = np.log(true_p99_over_slo * SLO["p99_e2el_ms"]) - 2.326 * sigma  # true p99 = ratio * SLO
    wrong = 0
    for _ in range(trials):
        verdict = RULE([run_from_sample(np.exp(rng.normal(mu, sigma, n)))], SLO, 1.0, 0.05)
        truly_feasible = true_p99_over_slo <= 1.0
        wrong += verdict is (Verdict.INFEASIBLE if truly_feasible else Verdict.FEASIBLE)
    assert wrong / trials <= 0.07


@pytest.mark.parametrize("true_p99_over_slo", [1.02, 1.05])
def test_three_repeats_just_over_the_slo_are_rarely_called_feasible(true_p99_over_slo):
    """The repeats' t-interval is on the sample p99, biased low at 150 requests: it must stay calibrated."""
    rng = np.random.default_rng(int(true_p99_over_slo * 1000))
    sigma, n, trials = 0.8, 150, 300
    mu = np.log(true_p99_over_slo * SLO["p99_e2el_ms"]) - 2.326 * sigma
    wrong = sum(RULE([run_from_sample(np.exp(rng.normal(mu, sigma, n)), repeat=r) for r in range(3)], SLO, 1.0, 0.05)
                is Verdict.FEASIBLE for _ in range(trials))
    assert wrong / trials <= 0.07  # 5% + sampling slack over 300 trials (without the widening: ~13%)


def test_failed_runs_do_not_count_towards_settling():
    failed = [Measurement(CELL, Status.FAILED, repeat=r, reason="connection refused") for r in (1, 2)]
    rule = noise_aware_rule(0.95, settle_after=3)
    assert rule([summary_run(10000, 20000, 29000, n=150), *failed], SLO, 1.0, 0.05) is Verdict.INDETERMINATE


def test_far_from_the_slo_the_rule_decides():
    rng = np.random.default_rng(0)
    mu = np.log(0.4 * SLO["p99_e2el_ms"]) - 2.326 * 0.8
    verdicts = [RULE([run_from_sample(np.exp(rng.normal(mu, 0.8, 600)))], SLO, 1.0, 0.05) for _ in range(50)]
    assert sum(v is Verdict.FEASIBLE for v in verdicts) >= 45


def test_a_shortfall_counts_as_falling_behind_only_beyond_count_noise():
    # 10 req/s for 300 s with saturation_tol 0.15: 2,550 completions would just keep up (sd ~50).
    def run(completed: int) -> Measurement:
        metrics = {"p50_e2el_ms": 5000, "p90_e2el_ms": 9000, "p99_e2el_ms": 12000, "request_throughput": completed / 300.0}
        return Measurement(Cell("chat", 1, 10.0), metrics=metrics, num_requests=3000, completed=completed, duration_s=300.0)
    assert RULE([run(2535)], SLO, 10.0, 0.15) is Verdict.FEASIBLE  # 0.3 sd short: noise
    assert RULE([run(2400)], SLO, 10.0, 0.15) is Verdict.INFEASIBLE  # 3 sd short: behind
    assert RULE([run(2535), dataclasses.replace(run(2400), repeat=1)], SLO, 10.0, 0.15) is Verdict.INFEASIBLE


def test_the_same_repeat_handed_back_twice_is_not_new_evidence():
    once = [summary_run(10000, 20000, 28000, n=150)]
    assert RULE(once, SLO, 1.0, 0.05) is Verdict.INDETERMINATE
    assert RULE(once * 3, SLO, 1.0, 0.05) is Verdict.INDETERMINATE


def test_two_close_repeats_are_not_trusted_for_their_spread():
    # Two runs a hair apart would give a tight t-interval by chance; a third run widens it again.
    runs = [dataclasses.replace(summary_run(10000, 20000, v, n=150), repeat=i) for i, v in enumerate((28000, 28100))]
    assert repeat_interval([r.metric("p99_e2el_ms") for r in runs], 0.975) == (-np.inf, np.inf)
    assert RULE(runs, SLO, 1.0, 0.05) is Verdict.INDETERMINATE


def test_a_cell_still_indeterminate_after_settle_after_runs_is_infeasible():
    runs = [dataclasses.replace(summary_run(10000, 20000, v, n=150), repeat=i) for i, v in enumerate((29000, 31000, 29500))]
    assert noise_aware_rule(0.95, settle_after=None)(runs, SLO, 1.0, 0.05) is Verdict.INDETERMINATE
    assert noise_aware_rule(0.95, settle_after=3)(runs, SLO, 1.0, 0.05) is Verdict.INFEASIBLE
    assert noise_aware_rule(0.95, settle_after=3)(runs[:2], SLO, 1.0, 0.05) is Verdict.INDETERMINATE


def test_a_repeat_handed_back_twice_does_not_count_towards_settling():
    run = summary_run(10000, 20000, 29000, n=150)
    assert noise_aware_rule(0.95, settle_after=2)([run, run], SLO, 1.0, 0.05) is Verdict.INDETERMINATE


def test_settle_after_must_be_positive():
    with pytest.raises(InputError):
        noise_aware_rule(0.95, settle_after=0)


def test_one_run_far_over_the_slo_is_infeasible_even_with_p90_under_it():
    # p90 20 s, p99 60 s from 3000 requests: the true p99 cannot sit below ~50 s.
    assert RULE([summary_run(10000, 20000, 60000, n=3000)], SLO, 1.0, 0.05) is Verdict.INFEASIBLE


def test_a_throughput_shortfall_within_count_noise_is_not_falling_behind():
    # 256 completions where 0.85 x 1 req/s x 305 s = 259 were needed: Poisson noise, not saturation.
    assert RULE([summary_run(5000, 9000, 12000, n=256, throughput=0.84)], SLO, 1.0, 0.15) is not Verdict.INFEASIBLE
    assert RULE([summary_run(5000, 9000, 12000, n=256, throughput=0.60)], SLO, 1.0, 0.15) is Verdict.INFEASIBLE


def test_a_p99_needs_555_requests_before_one_run_can_bound_it_at_97_5_percent():
    from fleetsieve.noise import single_run_can_show_under
    # The bound must be an order statistic below the maximum: P(Binom(n, 0.99) <= n - 2) >= level.
    assert not single_run_can_show_under(554, 0.99, 0.975) and single_run_can_show_under(555, 0.99, 0.975)
    # RULE has one SLO metric, so its level is 0.95: from n = 473.
    assert RULE.runs_to_show_feasible(SLO, 472) == 3 and RULE.runs_to_show_feasible(SLO, 473) == 1
    assert RULE.runs_to_show_feasible({"p50_e2el_ms": 1.0}, 10) == 1
