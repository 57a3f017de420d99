import math

import pytest
from scipy.stats import binom

from fleetsieve.backends.openai.abort import (AbortRule, count_tail, exceedance_p_value, parse_quantile_slo,
                                              slo_horizon_s)
from fleetsieve.backends.openai.backend import OpenAIBackend
from fleetsieve.backends.openai.loadgen import InFlight, RunSnapshot
from fleetsieve.backends.openai.timing import RequestRecord, Window
from fleetsieve.records import Cell, Status
from fleetsieve.serve_sim import FixedStepEngine, ServerThread, create_app


def test_parse_quantile_slo():
    assert parse_quantile_slo("p99_e2el_ms") == ("e2el", 0.99)
    assert parse_quantile_slo("p90_ttft_ms") == ("ttft", 0.9)
    assert parse_quantile_slo("median_ttft_ms") == ("ttft", 0.5)
    assert parse_quantile_slo("mean_e2el_ms") is None
    assert parse_quantile_slo("p99_tpot_ms") is None


def test_p_value_is_the_binomial_tail():
    assert exceedance_p_value(0, 100, 0.99) == 1.0
    assert exceedance_p_value(5, 100, 0.99) == pytest.approx(binom.sf(4, 100, 0.01))
    # 3 of 10 over the p99 bound is very unlikely if the p99 met it
    assert exceedance_p_value(3, 10, 0.99) < 1e-3


def done(i, start, e2e, ttft=0.01):
    return RequestRecord(i, start, start, 10, 2, (start + ttft, start + e2e))


def test_count_tail_decides_only_old_enough_requests_and_counts_waiting_ones_as_over():
    window = Window(0.0, 100.0)
    finished = [done(0, 1.0, 0.5), done(1, 2.0, 3.0), done(2, 9.5, 0.1)]
    waiting = [InFlight(3, 4.0, 4.0, 10), InFlight(4, 9.0, 9.0, 10)]
    snap = RunSnapshot(now_s=10.0, finished=finished, in_flight=waiting, sent=5)
    tail = count_tail(snap, window, "e2el", bound_s=2.0)
    # decided: sent at or before t=8 -> requests 0, 1, 3; over the bound: 1 (3 s) and 3 (waiting 6 s)
    assert (tail.decided, tail.violations) == (3, 2)
    ttft = count_tail(snap, window, "ttft", bound_s=2.0)
    assert (ttft.decided, ttft.violations) == (3, 1)


def test_rule_fires_on_tail_and_on_growing_backlog():
    window = Window(0.0, 100.0)
    rule = AbortRule({"p99_e2el_ms": 1000.0}, window, rate_rps=10, max_looks=10)
    slow = [done(i, float(i), 5.0) for i in range(10)]
    reason = rule(RunSnapshot(20.0, slow, [], 10))
    assert reason and "p99_e2el_ms above the SLO" in reason
    assert rule(RunSnapshot(20.0, [done(i, float(i), 0.2) for i in range(10)], [], 10)) is None

    backlog = AbortRule({"p99_tpot_ms": 50.0}, window, rate_rps=1, max_looks=10, horizon_s=2.0, min_backlog=5)
    reasons = [backlog(RunSnapshot(t, [], [InFlight(i, t, t, 1) for i in range(n)], n))
               for t, n in enumerate([3, 6, 9, 12])]
    assert reasons[:3] == [None, None, None] and "backlog keeps growing" in reasons[3]


def test_slo_horizon():
    assert slo_horizon_s({"p99_e2el_ms": 3000, "p99_ttft_ms": 9000}, 60) == 3.0
    assert slo_horizon_s(None, 60) == 60


def live(endpoint, **kw):
    args = dict(endpoint=endpoint, model="m", duration_s=6.0, warmup_s=0.5, cooldown_s=0.5, fixed_lengths=(10, 40),
                request_timeout_s=30.0, check_interval_s=0.2, max_retries=0)
    return OpenAIBackend({**args, **kw})


def test_overloaded_run_is_aborted_early_with_gpu_seconds_spent():
    # 20 ms steps x 40 tokens = 0.8 s per request at least; SLO 0.3 s is hopeless.
    with ServerThread(create_app(FixedStepEngine(step_s=0.02), model="m")) as server:
        m = live(server.url).measure(Cell("synthetic", 4, 20.0), slo={"p99_e2el_ms": 300.0})
    assert m.status is Status.ABORTED_INFEASIBLE
    assert "above the SLO" in m.reason or "backlog keeps growing" in m.reason
    assert m.duration_s < 3.0  # stopped well before the 6 s run
    assert m.gpu_seconds == pytest.approx(4 * m.duration_s)


def test_feasible_run_is_not_aborted():
    with ServerThread(create_app(FixedStepEngine(step_s=0.002), model="m")) as server:
        m = live(server.url, duration_s=1.5, fixed_lengths=(10, 5)).measure(Cell("synthetic", 1, 20.0),
                                                                           slo={"p99_e2el_ms": 2000.0})
    assert m.status is Status.OK and m.metric("p99_e2el_ms") < 2000.0
    assert not math.isnan(m.metric("p99_ttft_ms"))


def test_low_rate_tail_violation_is_caught_by_the_binomial_bound():
    with ServerThread(create_app(FixedStepEngine(step_s=0.02), model="m")) as server:
        m = live(server.url).measure(Cell("synthetic", 2, 5.0), slo={"p99_e2el_ms": 300.0})
    assert m.status is Status.ABORTED_INFEASIBLE and "above the SLO" in m.reason
    assert m.duration_s < 4.0 and m.gpu_seconds == pytest.approx(2 * m.duration_s)
