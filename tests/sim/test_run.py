"""Closed- and open-loop runs: metric keys, warm-up exclusion, the KV cliff, backlog censoring."""

import math

import numpy as np
import pytest

from fleetsieve.metrics import GRID_METRIC_COLUMNS
from fleetsieve.sim import make_engine, run_closed_loop, run_open_loop


def qwen(tp):
    return make_engine(model="Qwen/Qwen3-32B", gpu="h100-sxm", tp=tp)


def test_closed_loop_reports_vllm_keys():
    result = run_closed_loop(qwen(4), concurrency=8, isl=256, osl=32)
    for key in GRID_METRIC_COLUMNS + ("median_ttft_ms", "output_throughput"):
        assert math.isfinite(result.metrics[key]), key
    assert result.completed == 8 * 8
    assert result.metrics["p99_e2el_ms"] >= result.metrics["p50_e2el_ms"] > result.metrics["p50_ttft_ms"]


@pytest.mark.slow
def test_kv_cliff_tp2_isl4096_concurrency128():
    """Real: TP2 TTFT 19-59 s (KV cache exhausted), TP4 about 1.4 s."""
    tp2 = run_closed_loop(qwen(2), concurrency=128, isl=4096, osl=128)
    tp4 = run_closed_loop(qwen(4), concurrency=128, isl=4096, osl=128)
    assert tp2.metrics["mean_ttft_ms"] > 10_000
    assert tp4.metrics["mean_ttft_ms"] < 3_000
    assert tp2.metrics["mean_ttft_ms"] > 5 * tp4.metrics["mean_ttft_ms"]


def _poisson(rate, duration, seed=0):
    rng = np.random.default_rng(seed)
    arrivals = np.cumsum(rng.exponential(1 / rate, int(rate * duration * 1.5)))
    arrivals = arrivals[arrivals < duration]
    n = arrivals.size
    return arrivals, rng.integers(100, 2000, n), rng.integers(10, 300, n)


def test_open_loop_light_load_is_fast_and_complete():
    arrivals, prompts, outputs = _poisson(1.0, 120)
    result = run_open_loop(qwen(4), arrivals, prompts, outputs, duration_s=120)
    assert result.unfinished == 0 and result.completed == result.num_requests
    assert result.num_requests == int((arrivals >= 12).sum())  # first 10 % is warm-up
    assert result.metrics["request_throughput"] == pytest.approx(1.0, rel=0.3)
    assert result.metrics["p99_ttft_ms"] < 2000


def test_open_loop_latency_grows_with_load_and_overload_is_censored():
    light = run_open_loop(qwen(1), *_poisson(0.2, 100), duration_s=100)
    heavy = run_open_loop(qwen(1), *_poisson(20.0, 100), duration_s=100, max_drain_s=20)
    assert heavy.metrics["p99_e2el_ms"] > 5 * light.metrics["p99_e2el_ms"]
    assert heavy.unfinished > 0 and heavy.preemptions >= 0
    assert heavy.metrics["p99_e2el_ms"] >= 20_000  # unfinished requests count at least their age
