"""The engine against a plain per-request oracle (``reference_engine.py``), step for step.

Small KV caches, tight token budgets and few sequence slots force every path: chunked prefill,
starved decoders, preemption storms, requests that never fit.
"""

import dataclasses

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetsieve.sim.engine import Engine
from fleetsieve.sim.factory import make_parts

from reference_engine import ReferenceEngine

TICKS = 300

requests = st.lists(st.tuples(st.integers(0, 40), st.integers(1, 300), st.integers(1, 40)), min_size=1, max_size=10)
configs = st.fixed_dictionaries({
    "block_size": st.sampled_from([1, 4, 16]),
    "num_blocks": st.integers(1, 80),
    "max_num_batched_tokens": st.sampled_from([8, 64, 512, 8192]),
    "max_num_seqs": st.sampled_from([1, 2, 3, 5, 256]),
})


def build(cfg):
    steps, layout, config = make_parts(model="Qwen/Qwen3-32B", gpu="h100-sxm", tp=2, block_size=cfg["block_size"],
                                       max_num_batched_tokens=cfg["max_num_batched_tokens"],
                                       max_num_seqs=cfg["max_num_seqs"])
    engine = Engine(steps, dataclasses.replace(layout, num_blocks=cfg["num_blocks"]), config)
    reference = ReferenceEngine(steps, cfg["num_blocks"], cfg["max_num_batched_tokens"], cfg["max_num_seqs"],
                                cfg["block_size"])
    return engine, reference


def drive_reference(reference, arrivals):
    """Arrivals by tick; one step per tick while there is work. Returns the clock at each tick."""
    clocks = []
    for tick in range(TICKS):
        clocks.append(reference.now_s)
        for at, prompt, target in arrivals:
            if at == tick:
                reference.add(prompt, target, reference.now_s)
        if reference.running or reference.waiting:
            reference.step()
    return clocks


def drive_engine(engine, arrivals, clocks, end_s, mode):
    """The same arrivals. ``step`` and ``advance`` run one step per tick; ``run_until`` runs to
    the clock at which the reference took each tick's arrivals, so whole stretches of steps run
    inside the engine."""
    durations = []
    for tick in range(TICKS):
        if mode == "run_until":
            engine.run_until(clocks[tick])
        for rid, (at, prompt, target) in enumerate(arrivals):
            if at == tick:
                engine.add_request(rid, prompt, target, engine.now_s)
        if mode == "step" and engine.has_work:
            durations.append(engine.step().duration_s)
        elif mode == "advance" and engine.has_work:
            engine.advance()
    if mode == "run_until":
        engine.run_until(end_s)
    return durations


@settings(max_examples=120, deadline=None)
@given(arrivals=requests, cfg=configs, mode=st.sampled_from(["step", "advance", "run_until"]))
def test_engine_matches_reference_step_for_step(arrivals, cfg, mode):
    arrivals = sorted(arrivals)
    engine, reference = build(cfg)
    clocks = drive_reference(reference, arrivals)
    durations = drive_engine(engine, arrivals, clocks, reference.now_s, mode)
    if mode == "step":
        assert durations == reference.durations
    assert engine.steps == len(reference.durations) and engine.now_s == reference.now_s
    table = engine.requests
    for column in ("first_step", "finish_step", "preemptions", "generated", "computed"):
        assert getattr(table, column).tolist() == [getattr(r, column) for r in reference.reqs], column
    assert engine.free_blocks == reference.free
    assert engine.num_running == len(reference.running) and engine.num_waiting == len(reference.waiting)
    np.testing.assert_allclose(np.sort(engine.inter_token_gaps()[1]), np.sort(reference.gaps), rtol=1e-9, atol=1e-12)
