import math

import numpy as np
import pytest

from fleetsieve.backends.openai.timing import RequestRecord, Window, make_window, summarize


def rec(i, start, chunks, out=None, error=None, scheduled=None):
    return RequestRecord(i, start if scheduled is None else scheduled, start, 10,
                         len(chunks) if out is None else out, tuple(chunks), error)


def test_latencies_follow_vllm_definitions():
    records = [rec(0, 1.0, [1.1, 1.3, 1.6]), rec(1, 2.0, [2.2, 2.4, 2.6, 2.8])]
    m = summarize(records, Window(0.0, 10.0))
    assert m["mean_ttft_ms"] == pytest.approx(150.0)
    assert m["mean_e2el_ms"] == pytest.approx((600 + 800) / 2)
    # TPOT per request: (0.5/2, 0.6/3) s
    assert m["mean_tpot_ms"] == pytest.approx((250 + 200) / 2)
    # ITL pools all gaps: 200, 300, 200, 200, 200
    assert m["mean_itl_ms"] == pytest.approx(220.0)
    assert m["p50_itl_ms"] == pytest.approx(200.0)
    assert m["completed"] == 2 and m["failed"] == 0


def test_window_excludes_warmup_and_cooldown_requests():
    records = [rec(0, 0.5, [0.6, 0.7]), rec(1, 5.0, [5.1, 5.2]), rec(2, 9.5, [9.9, 12.0])]
    m = summarize(records, make_window(10.0, 1.0, 1.0))
    assert m["completed"] == 1
    assert m["mean_ttft_ms"] == pytest.approx(100.0)
    assert m["request_throughput"] == pytest.approx(1 / 8.0)  # one request over the 8 s window
    assert m["output_throughput"] == pytest.approx(2 / 8.0)


def test_throughput_divides_by_the_drain_when_it_outlasts_the_window():
    records = [rec(i, 1.0 + i, [2.0 + i, 10.0 + 2 * i]) for i in range(4)]  # last one ends at t=16
    m = summarize(records, Window(0.0, 8.0))
    assert m["request_throughput"] == pytest.approx(4 / 16.0)
    assert m["output_throughput"] == pytest.approx(8 / 16.0)


def test_failed_requests_count_as_failed_not_as_latency():
    records = [rec(0, 1.0, [1.1, 1.2]), rec(1, 1.0, [1.5], error="HTTP 500: x")]
    m = summarize(records, Window(0.0, 10.0))
    assert m["completed"] == 1 and m["failed"] == 1
    assert m["p99_ttft_ms"] == pytest.approx(100.0)


def test_single_token_requests_have_no_tpot_and_empty_runs_give_nan():
    m = summarize([rec(0, 1.0, [1.1])], Window(0.0, 10.0))
    assert math.isnan(m["mean_tpot_ms"]) and m["mean_ttft_ms"] == pytest.approx(100.0)
    empty = summarize([], Window(0.0, 10.0))
    assert math.isnan(empty["p99_e2el_ms"]) and empty["request_throughput"] == 0.0


def test_chunks_carrying_several_tokens_use_usage_count_for_tpot():
    r = rec(0, 0.0, [0.1, 0.5], out=9)  # 9 tokens in 2 chunks
    assert r.tpot_s == pytest.approx(0.4 / 8)
    m = summarize([r], Window(0.0, 1.0))
    assert m["output_throughput"] == pytest.approx(9.0)


def test_percentiles_match_numpy():
    rng = np.random.default_rng(1)
    ttfts = rng.exponential(0.1, 200)
    records = [rec(i, float(i), [i + t, i + t + 0.01]) for i, t in enumerate(ttfts)]
    m = summarize(records, Window(0.0, 1000.0))
    assert m["p99_ttft_ms"] == pytest.approx(np.percentile(ttfts * 1e3, 99), rel=1e-6)
    assert m["p90_ttft_ms"] == pytest.approx(np.percentile(ttfts * 1e3, 90), rel=1e-6)


def test_make_window_falls_back_to_whole_run_when_nothing_is_left():
    assert make_window(10.0, 6.0, 6.0) == Window(0.0, 10.0)
    assert make_window(10.0, 1.0, 2.0) == Window(1.0, 8.0)
