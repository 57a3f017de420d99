"""Built-in workloads, arrival processes and request streams.

Statistical checks use fixed seeds and large samples; each tolerance is several standard
errors wide, so a change of seed would not break them either.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from fleetsieve.errors import InputError
from fleetsieve.sim.workloads import RequestStream, Workload, get_workload, list_workloads

SHARED_TRACES = Path(__file__).resolve().parents[3] / "shared" / "data" / "traces"


def _gaps_cv(stream: RequestStream) -> float:
    gaps = np.diff(stream.arrival_s)
    return float(gaps.std() / gaps.mean())


def test_list_workloads_names_the_four_builtins():
    assert list_workloads() == ["chat", "code", "sharegpt", "summarize"]


def test_unknown_workload_lists_the_available_names():
    with pytest.raises(InputError, match="unknown workload 'chatt'.*chat, code, sharegpt, summarize"):
        get_workload("chatt")


@pytest.mark.parametrize(
    ("name", "rows", "prompt_p50", "output_p50"),
    [("chat", 19366, 1020, 129), ("code", 8819, 1469, 13), ("summarize", 28257, 2730, 167), ("sharegpt", 30731, 1730, 415)],
)
def test_builtin_lengths_match_the_source_figures(name, rows, prompt_p50, output_p50):
    workload = get_workload(name)
    assert len(workload) == rows
    assert np.median(workload.prompt_tokens) == prompt_p50
    assert np.median(workload.output_tokens) == output_p50


def test_builtin_timestamps_match_the_source_rate_and_burstiness():
    chat, code = get_workload("chat"), get_workload("code")
    assert chat.trace_rate_rps == pytest.approx(5.53, abs=0.01)
    assert chat.trace_interarrival_cv == pytest.approx(1.09, abs=0.01)
    assert code.trace_rate_rps == pytest.approx(2.57, abs=0.01)
    assert code.trace_interarrival_cv == pytest.approx(13.15, abs=0.01)
    assert not get_workload("summarize").has_timestamps


@pytest.mark.skipif(not SHARED_TRACES.is_dir(), reason="shared trace data not present")
def test_packaged_chat_copy_keeps_every_source_row_in_order():
    with open(SHARED_TRACES / "azure_conv_2023.csv") as handle:
        rows = list(csv.DictReader(handle))
    chat = get_workload("chat")
    assert chat.prompt_tokens.tolist() == [int(r["ContextTokens"]) for r in rows]
    assert chat.output_tokens.tolist() == [int(r["GeneratedTokens"]) for r in rows]


def test_poisson_rate_and_cv():
    stream = get_workload("chat").sample(rate_rps=20.0, duration_s=20_000.0, seed=3)  # ~400k requests
    assert stream.mean_rate_rps == pytest.approx(20.0, rel=0.01)
    assert _gaps_cv(stream) == pytest.approx(1.0, abs=0.02)


@pytest.mark.parametrize(("cv", "rate_tol", "cv_tol"), [(0.5, 0.01, 0.02), (3.0, 0.03, 0.06), (13.0, 0.1, 0.1)])
def test_gamma_rate_and_cv(cv, rate_tol, cv_tol):
    stream = get_workload("chat").sample(rate_rps=10.0, duration_s=100_000.0, arrival="gamma", cv=cv, seed=5)
    assert stream.mean_rate_rps == pytest.approx(10.0, rel=rate_tol)
    assert _gaps_cv(stream) == pytest.approx(cv, rel=cv_tol)


def test_trace_timed_keeps_the_burstiness_of_code_at_the_target_rate():
    code = get_workload("code")
    loop_s = len(code) / 20.0  # one replay of the whole trace at 20 req/s
    for seed in range(4):
        stream = code.sample(rate_rps=20.0, duration_s=3 * loop_s, arrival="trace", seed=seed)
        assert stream.mean_rate_rps == pytest.approx(20.0, rel=1e-3)
        assert _gaps_cv(stream) == pytest.approx(code.trace_interarrival_cv, rel=0.03)


def test_trace_timed_short_window_is_bursty_not_poisson():
    code = get_workload("code")
    for seed in range(4):
        assert _gaps_cv(code.sample(rate_rps=20.0, duration_s=300.0, arrival="trace", seed=seed)) > 8.0


def test_trace_timed_replays_rows_with_their_lengths():
    code = get_workload("code")
    stream = code.sample(rate_rps=code.trace_rate_rps, duration_s=600.0, arrival="trace", seed=2)
    pairs = set(zip(code.prompt_tokens.tolist(), code.output_tokens.tolist()))
    assert set(zip(stream.prompt_tokens.tolist(), stream.output_tokens.tolist())) <= pairs
    # at the trace's own rate the gaps are the trace's own gaps
    real_gaps = set(np.round(np.diff(code.timestamps_s), 6).tolist())
    assert np.isin(np.round(np.diff(stream.arrival_s), 6)[:100], list(real_gaps)).mean() > 0.9


def test_trace_timed_seed_moves_the_start_point():
    code = get_workload("code")
    first = code.sample(rate_rps=5.0, duration_s=60.0, arrival="trace", seed=0)
    second = code.sample(rate_rps=5.0, duration_s=60.0, arrival="trace", seed=1)
    assert not np.array_equal(first.prompt_tokens[:20], second.prompt_tokens[:20])


def test_sampled_lengths_follow_the_source_and_keep_pairs():
    chat = get_workload("chat")
    stream = chat.sample(rate_rps=50.0, duration_s=2_000.0, seed=11)  # ~100k draws
    assert np.median(stream.prompt_tokens) == pytest.approx(1020, rel=0.03)
    assert np.median(stream.output_tokens) == pytest.approx(129, rel=0.03)
    pairs = set(zip(chat.prompt_tokens.tolist(), chat.output_tokens.tolist()))
    assert set(zip(stream.prompt_tokens.tolist(), stream.output_tokens.tolist())) <= pairs
    # joint draws keep the prompt/output correlation of the source rows
    source_corr = np.corrcoef(chat.prompt_tokens, chat.output_tokens)[0, 1]
    assert np.corrcoef(stream.prompt_tokens, stream.output_tokens)[0, 1] == pytest.approx(source_corr, abs=0.03)


@pytest.mark.parametrize(("arrival", "cv"), [("poisson", None), ("gamma", 2.0), ("trace", None)])
def test_same_seed_same_stream_other_seed_other_stream(arrival, cv):
    code = get_workload("code")
    a, b, c = (code.sample(rate_rps=20.0, duration_s=300.0, arrival=arrival, cv=cv, seed=s) for s in (4, 4, 5))
    for field in ("arrival_s", "prompt_tokens", "output_tokens"):
        assert np.array_equal(getattr(a, field), getattr(b, field))
    assert len(a) != len(c) or not np.array_equal(a.arrival_s, c.arrival_s)


@pytest.mark.parametrize(("arrival", "cv"), [("poisson", None), ("gamma", 0.7), ("trace", None)])
def test_stream_is_well_formed(arrival, cv):
    stream = get_workload("chat").sample(rate_rps=20.0, duration_s=300.0, arrival=arrival, cv=cv, seed=1)
    assert len(stream) > 1000
    assert np.all(np.diff(stream.arrival_s) >= 0)
    assert stream.arrival_s[0] >= 0 and stream.arrival_s[-1] < 300.0
    assert stream.prompt_tokens.min() >= 1 and stream.output_tokens.min() >= 1
    assert stream.duration_s == 300.0 and stream.workload == "chat"
    with pytest.raises(ValueError):
        stream.arrival_s[0] = 1.0  # frozen record, frozen arrays


def test_higher_rate_reuses_the_same_random_draws():
    chat = get_workload("chat")
    slow = chat.sample(rate_rps=5.0, duration_s=100.0, seed=9)
    fast = chat.sample(rate_rps=10.0, duration_s=100.0, seed=9)
    np.testing.assert_allclose(fast.arrival_s[: len(slow) // 2], slow.arrival_s[: len(slow) // 2] / 2.0)
    assert np.array_equal(fast.prompt_tokens[: len(slow)], slow.prompt_tokens)


def test_head_and_slice():
    stream = get_workload("chat").sample(rate_rps=20.0, duration_s=60.0, seed=0)
    head = stream.head(10)
    assert len(head) == 10 and np.array_equal(head.arrival_s, stream.arrival_s[:10])
    assert np.array_equal(stream[5:8].output_tokens, stream.output_tokens[5:8])
    with pytest.raises(TypeError):
        stream[3]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rate_rps": -1.0, "duration_s": 10.0}, "rate_rps must be a positive"),
        ({"rate_rps": 0.0, "duration_s": 10.0}, "rate_rps must be a positive"),
        ({"rate_rps": float("nan"), "duration_s": 10.0}, "rate_rps must be a positive"),
        ({"rate_rps": 1.0, "duration_s": 0.0}, "duration_s must be a positive"),
        ({"rate_rps": 1.0, "duration_s": -5.0}, "duration_s must be a positive"),
        ({"rate_rps": 1.0, "duration_s": 10.0, "arrival": "uniform"}, "unknown arrival process 'uniform'.*poisson, gamma, trace"),
        ({"rate_rps": 1.0, "duration_s": 10.0, "arrival": "gamma"}, "gamma arrivals need cv"),
        ({"rate_rps": 1.0, "duration_s": 10.0, "arrival": "gamma", "cv": 0.0}, "cv must be a positive"),
        ({"rate_rps": 1.0, "duration_s": 10.0, "arrival": "poisson", "cv": 2.0}, "cv applies to gamma arrivals only"),
        ({"rate_rps": 1e6, "duration_s": 1e6}, "over 20000000"),
    ],
)
def test_bad_sample_arguments_are_input_errors(kwargs, message):
    with pytest.raises(InputError, match=message):
        get_workload("chat").sample(**kwargs)


def test_trace_arrivals_need_timestamps():
    with pytest.raises(InputError, match="'summarize': has no timestamps"):
        get_workload("summarize").sample(rate_rps=1.0, duration_s=10.0, arrival="trace")


@pytest.mark.parametrize(
    ("prompt", "output", "stamps", "message"),
    [
        ([], [], None, "at least one row"),
        ([1, 2], [1], None, "at least one row"),
        ([0, 2], [1, 1], None, ">= 1"),
        ([1, 2], [1, 1], [2.0, 1.0], "ascending"),
        ([1, 2], [1, 1], [1.0, 1.0], "positive time"),
        ([1, 2], [1, 1], [0.0, np.inf], "finite timestamp"),
    ],
)
def test_workload_rejects_bad_rows(prompt, output, stamps, message):
    with pytest.raises(InputError, match=message):
        Workload("w", np.array(prompt), np.array(output), None if stamps is None else np.array(stamps))


def test_request_stream_rejects_unsorted_arrivals_and_zero_tokens():
    with pytest.raises(InputError, match="ascending"):
        RequestStream(np.array([1.0, 0.5]), np.array([1, 1]), np.array([1, 1]))
    with pytest.raises(InputError, match=">= 1"):
        RequestStream(np.array([0.0, 0.5]), np.array([1, 1]), np.array([0, 1]))
    with pytest.raises(InputError, match="differ in length"):
        RequestStream(np.array([0.0]), np.array([1, 1]), np.array([1, 1]))
