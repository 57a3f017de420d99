"""The ``sim`` backend: contract points (determinism, cost, failure as a value)."""

import math

from fleetsieve.backends import make_backend
from fleetsieve.records import Cell, Status


def backend(**kw):
    return make_backend("sim", {"duration_s": 40, **kw})


def test_deterministic_per_cell_seed_repeat():
    b = backend()
    cell = Cell("chat", 4, 2.0)
    a1, a2 = b.measure(cell, seed=1, repeat=0), b.measure(cell, seed=1, repeat=0)
    other = b.measure(cell, seed=1, repeat=1)
    assert a1.metrics == a2.metrics and a1.metrics != other.metrics
    assert a1.status is Status.OK and a1.gpu_seconds == 4 * 40 and a1.duration_s == 40


def test_model_too_big_is_an_infeasible_row_not_an_error():
    m = backend(model="meta-llama/Llama-3.1-70B").measure(Cell("chat", 1, 1.0))
    assert m.status is Status.ABORTED_INFEASIBLE and m.reason == "model does not fit" and m.gpu_seconds == 0
    assert math.isnan(m.metric("p99_e2el_ms"))


def test_unknown_workload_is_failed_measurement():
    m = backend().measure(Cell("no-such-workload", 2, 1.0))
    assert m.status is Status.FAILED and "no-such-workload" in (m.reason or "")
