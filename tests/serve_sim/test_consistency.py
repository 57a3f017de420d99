"""Live backend against serve-sim vs the offline simulator on the same cell: within 10%."""

import socket
import subprocess
import sys

import pytest

from fleetsieve.backends.openai import OpenAIBackend
from fleetsieve.backends.openai.backend import derive_seed
from fleetsieve.records import Cell, Status

sim_run = pytest.importorskip("fleetsieve.sim.run")
sim_factory = pytest.importorskip("fleetsieve.sim.factory")

MODEL, GPU, TP, RATE, DURATION, WARMUP = "Qwen/Qwen3-8B", "h100-sxm", 1, 8.0, 20.0, 4.0
TIME_SCALE = 0.3  # 20 simulated seconds in 6 wall seconds; faster overruns a 2-core box


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_live_measurement_of_serve_sim_matches_offline_simulation():
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "fleetsieve.serve_sim", "--model", MODEL, "--gpu", GPU,
                               "--tp", str(TP), "--time-scale", str(TIME_SCALE), "--port", str(port)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert "listening" in server.stdout.readline()
        backend = OpenAIBackend(dict(endpoint=f"http://127.0.0.1:{port}", model=MODEL, duration_s=DURATION,
                                     warmup_s=WARMUP, cooldown_s=0.0, time_scale=TIME_SCALE))
        cell = Cell("chat", TP, RATE)
        live = backend.measure(cell, seed=5)
    finally:
        server.terminate()
        server.wait(10)
    plan = backend.plan(cell, derive_seed(5, 0))  # the very requests the live run sent
    engine = sim_factory.make_engine(model=MODEL, gpu=GPU, tp=TP)
    offline = sim_run.run_open_loop(engine, plan.arrival_s, plan.prompt_tokens, plan.output_tokens,
                                    duration_s=DURATION, warmup_s=WARMUP)
    assert live.status is Status.OK
    for key in ("p99_e2el_ms", "request_throughput"):
        assert live.metric(key) == pytest.approx(float(offline.metrics[key]), rel=0.10), key
