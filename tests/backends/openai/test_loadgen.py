import numpy as np
import pytest

from fleetsieve.backends.openai.loadgen import ClientOptions, RequestPlan, run_load
from fleetsieve.backends.openai.timing import Window, summarize
from fleetsieve.serve_sim import FixedStepEngine, ServerThread, create_app


def poisson_plan(rate, duration, prompt=50, output=8, seed=0):
    rng = np.random.default_rng(seed)
    arrivals = np.cumsum(rng.exponential(1 / rate, int(rate * duration * 2)))
    arrivals = arrivals[arrivals < duration]
    n = len(arrivals)
    return RequestPlan(arrivals, np.full(n, prompt), np.full(n, output), duration)


def test_every_request_completes_with_its_exact_output_length(sim_server):
    plan = poisson_plan(rate=50, duration=1.0, output=8)
    out = run_load(plan, ClientOptions(sim_server.url, "m"))
    assert len(out.records) == len(plan) and out.stopped_by is None
    assert all(r.ok for r in out.records)
    assert all(r.output_tokens == 8 and len(r.chunk_times_s) == 8 for r in out.records)


def test_open_loop_sends_on_schedule_and_measures_step_time(sim_server):
    plan = poisson_plan(rate=40, duration=1.0, output=10)
    out = run_load(plan, ClientOptions(sim_server.url, "m"))
    lateness = np.array([r.start_s - r.scheduled_s for r in out.records])
    assert lateness.min() >= -1e-3 and np.percentile(lateness, 90) < 0.02
    m = summarize(out.records, Window(0.0, 1.0))
    assert m["median_tpot_ms"] == pytest.approx(2.0, rel=0.5)  # the server's 2 ms step
    assert m["mean_e2el_ms"] > m["mean_ttft_ms"] > 0


def test_chat_api_streams_too(sim_server):
    plan = poisson_plan(rate=20, duration=0.5, output=5)
    out = run_load(plan, ClientOptions(sim_server.url, "m", api="chat"))
    assert all(r.ok and r.output_tokens == 5 for r in out.records)


def test_time_scale_reports_model_seconds():
    engine = FixedStepEngine(step_s=0.05)  # 50 ms per step in model time
    with ServerThread(create_app(engine, model="m", time_scale=0.1)) as server:
        plan = poisson_plan(rate=5, duration=4.0, output=6)  # 4 model seconds = 0.4 wall s
        out = run_load(plan, ClientOptions(server.url, "m", time_scale=0.1))
    assert out.wall_s < 2.0
    m = summarize(out.records, Window(0.0, 4.0))
    assert m["median_tpot_ms"] == pytest.approx(50.0, rel=0.3)


def test_watcher_stop_cancels_in_flight_requests(sim_server):
    plan = poisson_plan(rate=50, duration=3.0, output=2000)  # would take ~4 s each
    out = run_load(plan, ClientOptions(sim_server.url, "m"), watcher=lambda s: "enough" if s.now_s > 0.3 else None,
                   check_interval_s=0.1)
    assert out.stopped_by == "watcher" and out.stop_reason == "enough"
    assert out.wall_s < 1.5
    assert len(out.records) < len(plan) and all(r.error.startswith("cancelled") for r in out.records)


def test_requests_share_keep_alive_connections_and_stamps_follow_the_send(sim_server):
    plan = poisson_plan(rate=100, duration=1.0, output=4)
    out = run_load(plan, ClientOptions(sim_server.url, "m"))
    assert all(r.ok for r in out.records) and len(out.records) > 50
    # ~100 requests of ~10 ms each at 100/s overlap a few at a time: a handful of connections
    assert 1 <= out.connections_opened <= 20
    for r in out.records:
        assert r.start_s <= r.chunk_times_s[0] <= r.chunk_times_s[-1]
        assert list(r.chunk_times_s) == sorted(r.chunk_times_s)


def test_connection_cap_bounds_connections_and_every_request_still_completes(sim_server):
    plan = poisson_plan(rate=200, duration=0.5, output=4)
    out = run_load(plan, ClientOptions(sim_server.url, "m", max_connections=2))
    assert all(r.ok for r in out.records) and out.connections_opened <= 2
