import sys

import pytest

from fleetsieve.backends.openai.backend import OpenAIBackend, derive_seed
from fleetsieve.errors import InputError
from fleetsieve.metrics import GRID_METRIC_COLUMNS
from fleetsieve.records import Cell, Status
from fleetsieve.spec import parse_spec


def test_ok_measurement_has_every_grid_metric_and_its_cost(sim_server):
    b = OpenAIBackend(dict(endpoint=sim_server.url, model="m", duration_s=1.0, warmup_s=0.1, cooldown_s=0.1,
                           fixed_lengths=(20, 6)))
    m = b.measure(Cell("synthetic", 2, 30.0), seed=1, repeat=0)
    assert m.status is Status.OK and m.reason is None
    assert all(key in m.metrics for key in GRID_METRIC_COLUMNS)
    assert m.metric("p99_e2el_ms") >= m.metric("p50_e2el_ms") > m.metric("p50_ttft_ms") > 0
    assert m.gpu_seconds == pytest.approx(2 * m.duration_s) and m.duration_s >= 1.0
    assert 0 < m.completed == m.num_requests <= m.extra["planned_requests"]
    assert m.metric("request_throughput") == pytest.approx(30.0, rel=0.5)


def test_workload_lengths_come_from_the_simulator_workloads(sim_server):
    b = OpenAIBackend(dict(endpoint=sim_server.url, model="m", duration_s=0.5, warmup_s=0, cooldown_s=0))
    plan = b.plan(Cell("chat", 1, 20.0), seed=derive_seed(0, 0))
    assert len(plan) > 0 and plan.prompt_tokens.min() >= 1 and plan.arrival_s.max() < 0.5
    assert derive_seed(0, 0) != derive_seed(0, 1)


def test_validate_rejects_unknown_workloads():
    spec = parse_spec({"gpu_budget": 4, "workloads": {"nope": {"demand_rps": 1, "slo": {"p99_e2el_ms": 1000}}}})
    with pytest.raises(InputError, match="unknown workload"):
        OpenAIBackend(dict(model="m")).validate(spec)


def test_args_are_strict():
    with pytest.raises(Exception, match="extra"):
        OpenAIBackend(dict(model="m", typo=1))


def test_backend_launches_and_reuses_the_engine(tmp_path, closed_port):
    stand_in = [sys.executable, "-m", "fleetsieve.serve_sim", "--model", "{model}", "--engine", "fixed",
                "--step-ms", "2", "--port", "{port}"]
    launch = dict(engine="command", command=stand_in, port=closed_port, log_dir=str(tmp_path))
    b = OpenAIBackend(dict(model="m", duration_s=0.5, warmup_s=0, cooldown_s=0, fixed_lengths=(8, 4), launch=launch))
    try:
        first = b.measure(Cell("synthetic", 1, 20.0))
        second = b.measure(Cell("synthetic", 1, 40.0))
    finally:
        b.shutdown()
    assert first.status is Status.OK and second.status is Status.OK
    assert first.extra["startup_gpu_seconds"] > 0 and second.extra["startup_gpu_seconds"] == 0
    assert b.startup_gpu_seconds == first.extra["startup_gpu_seconds"]
    assert not b.launcher.running
