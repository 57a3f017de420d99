"""Engine scheduler: vLLM V1 behaviour (budget, admission, preemption by recompute) on small cases."""

import numpy as np
import pytest

from fleetsieve.errors import InputError
from fleetsieve.sim import make_engine
from fleetsieve.sim.engine import Engine
from fleetsieve.sim.factory import make_parts


def qwen(tp=2, **kw):
    return make_engine(model="Qwen/Qwen3-32B", gpu="h100-sxm", tp=tp, **kw)


def small_kv_engine(blocks, **kw):
    steps, layout, config = make_parts(model="Qwen/Qwen3-32B", gpu="h100-sxm", tp=2, **kw)
    return Engine(steps, layout.__class__(**{**layout.__dict__, "num_blocks": blocks}), config)


def drain(engine):
    outcomes = []
    while (o := engine.step()) is not None:
        outcomes.append(o)
    return outcomes


def test_idle_engine_returns_none():
    engine = qwen()
    assert engine.step() is None and not engine.has_work


def test_chunked_prefill_respects_token_budget():
    engine = qwen(max_num_batched_tokens=1000)
    engine.add_request(1, 2500, 3, 0.0)
    first = engine.step()
    assert first.new_tokens == {}  # 1000 of 2500 prompt tokens computed, no token yet
    engine.step()
    third = engine.step()
    assert third.new_tokens == {1: 1}  # the last 500-token chunk emits the first token
    rest = drain(engine)
    assert rest[-1].finished == (1,)
    assert sum(sum(o.new_tokens.values()) for o in [third] + rest) == 3


def test_fcfs_and_max_num_seqs():
    engine = qwen(max_num_seqs=2)
    for rid in range(3):
        engine.add_request(rid, 10, 5, 0.0)
    out = engine.step()
    assert set(out.new_tokens) == {0, 1}
    assert engine.num_waiting == 1


def test_clock_jumps_to_arrival_when_idle_and_advances_by_step_durations():
    engine = qwen()
    engine.add_request(7, 100, 2, 5.0)
    a, b = engine.step(), engine.step()
    assert engine.now_s == pytest.approx(5.0 + a.duration_s + b.duration_s)
    assert b.finished == (7,)


def test_preemption_by_recompute_newest_first_and_tokens_conserved():
    engine = small_kv_engine(blocks=12)  # 192 tokens of KV
    engine.add_request(0, 60, 60, 0.0)
    engine.add_request(1, 60, 60, 0.0)
    outcomes = drain(engine)
    preempted = [p for o in outcomes for p in o.preempted]
    assert preempted and set(preempted) == {1}  # the newest running request is the victim
    emitted = {0: 0, 1: 0}
    for o in outcomes:
        for rid, n in o.new_tokens.items():
            emitted[rid] += n
    assert emitted == {0: 60, 1: 60}
    assert engine.free_blocks == 12


def test_duplicate_id_and_bad_lengths_are_input_errors():
    engine = qwen()
    engine.add_request(1, 5, 5, 0.0)
    with pytest.raises(InputError):
        engine.add_request(1, 5, 5, 0.0)
    with pytest.raises(InputError):
        engine.add_request(2, 0, 5, 0.0)


def test_step_advance_and_run_until_give_the_same_run():
    def run(how):
        engine = qwen(tp=4)
        for rid in range(20):
            engine.add_request(rid, 200 + 13 * rid, 40 + 7 * rid, 0.0)
        while engine.has_work:
            {"step": engine.step, "advance": engine.advance, "run_until": lambda: engine.run_until(np.inf)}[how]()
        r = engine.requests
        return r.finish.tolist(), sorted(engine.inter_token_gaps()[1].tolist()), engine.steps
    assert run("step") == run("advance") == run("run_until")


def test_snapshot_brings_steady_decoders_up_to_date():
    engine = qwen(tp=4)
    engine.add_request(0, 100, 50, 0.0)
    for _ in range(6):
        engine.step()  # step 1 prefills and emits; steps 2-6 decode
    r = engine.requests
    assert (r.computed[0], r.generated[0], r.last_token[0]) == (105, 6, engine.now_s)
    gaps = engine.inter_token_gaps()[1]
    assert gaps.size == 5 and np.all(gaps > 0)


def test_unknown_model_and_gpu_and_too_big_model():
    with pytest.raises(InputError, match="unknown model"):
        make_engine(model="org/nope", gpu="h100-sxm", tp=1)
    with pytest.raises(InputError, match="unknown gpu"):
        make_engine(model="Qwen/Qwen3-32B", gpu="tpu-v9", tp=1)
    with pytest.raises(InputError, match="does not fit"):
        make_engine(model="meta-llama/Llama-3.1-70B", gpu="h100-sxm", tp=1)
