"""BackendContract: the promises of ``backends/base.py``, checked on every registered backend that runs on a CPU.

Each entry of ``BACKENDS`` gets a factory that builds it with small, fast settings. A backend
is skipped only when it cannot run here, and the skip says why.
"""

from __future__ import annotations

import importlib
import math
import re
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from fleetsieve.backends import BACKENDS, Backend, make_backend
from fleetsieve.errors import InputError
from fleetsieve.metrics import GRID_METRIC_COLUMNS, SLO_METRICS
from fleetsieve.records import Cell, Measurement, Status
from fleetsieve.spec import parse_spec

REPO = Path(__file__).resolve().parents[2]
GRID = REPO / "examples" / "synthetic" / "grid.csv"
#: vLLM --save-result keys: latency statistics (mean/median/std/pNN of ttft/tpot/itl/e2el, ms) and totals.
LATENCY_KEY = re.compile(r"^(mean|median|std|p\d+(\.\d+)?)_(ttft|tpot|itl|e2el)_ms$")
VLLM_TOTALS = {"request_throughput", "output_throughput", "total_token_throughput", "duration", "completed",
               "total_input_tokens", "total_output_tokens", "request_goodput"}


def _foreign_keys(metrics) -> set[str]:
    known = set(GRID_METRIC_COLUMNS) | set(SLO_METRICS) | VLLM_TOTALS
    return {k for k in metrics if k not in known and not LATENCY_KEY.match(k)}
SLO = {"p99_e2el_ms": 30000.0}


def _importable(module: str) -> str | None:
    try:
        importlib.import_module(module)
    except ImportError as err:
        return str(err)
    return None


@contextmanager
def _replay():
    yield make_backend("replay", {"grid": str(GRID)}), Cell("chat", 1, 0.5), True


@contextmanager
def _sim():
    problem = _importable(BACKENDS["sim"].partition(":")[0])
    if problem:
        pytest.skip(f"the simulator backend is not in this tree yet ({problem})")
    yield make_backend("sim", {}), Cell("chat", 1, 0.5), True


@contextmanager
def _openai():
    from fleetsieve.serve_sim import FixedStepEngine, ServerThread, create_app

    with ServerThread(create_app(FixedStepEngine(step_s=0.002), model="m")) as server:
        backend = make_backend("openai", {"endpoint": server.url, "model": "m", "duration_s": 0.5, "warmup_s": 0.0,
                                          "cooldown_s": 0.0, "fixed_lengths": (8, 4)})
        yield backend, Cell("chat", 1, 4.0), False  # live: timing differs run to run


FACTORIES = {"replay": _replay, "sim": _sim, "openai": _openai}


def test_every_registered_backend_has_a_contract_factory():
    assert set(BACKENDS) <= set(FACTORIES)


@pytest.fixture(params=sorted(BACKENDS))
def subject(request):
    with ExitStack() as stack:
        backend, cell, deterministic = stack.enter_context(FACTORIES[request.param]())
        stack.enter_context(backend)
        yield backend, cell, deterministic


class TestBackendContract:
    def test_is_a_named_plugin(self, subject):
        backend, _, _ = subject
        assert isinstance(backend, Backend) and backend.name in BACKENDS
        assert backend.Args.model_config.get("extra") == "forbid"

    def test_measure_returns_the_cell_with_vllm_keys(self, subject):
        backend, cell, _ = subject
        m = backend.measure(cell, seed=1, repeat=0, slo=SLO)
        assert isinstance(m, Measurement) and m.cell == cell and m.repeat == 0
        assert m.status is Status.OK, m.reason
        assert not _foreign_keys(m.metrics)
        assert m.gpu_seconds > 0 and math.isfinite(m.metric("request_throughput"))

    def test_deterministic_when_it_claims_to_be(self, subject):
        backend, cell, deterministic = subject
        if not deterministic:
            pytest.skip(f"{backend.name} measures live timing, which differs between runs by nature")
        assert backend.measure(cell, seed=5, repeat=1, slo=SLO) == backend.measure(cell, seed=5, repeat=1, slo=SLO)

    def test_an_impossible_cell_is_a_value_not_an_exception(self, subject):
        backend, cell, _ = subject
        odd = Cell("no-such-workload", cell.tp, cell.load_rps)
        try:
            m = backend.measure(odd, seed=0, repeat=0, slo=SLO)
        except InputError:
            return  # refusing bad input up front is allowed; a crash is not
        assert m.status in (Status.FAILED, Status.ABORTED_INFEASIBLE, Status.OK) and m.gpu_seconds >= 0
        if m.status is Status.FAILED:
            assert m.reason

    def test_validate_refuses_what_it_cannot_measure(self, subject):
        backend, _, _ = subject
        spec = parse_spec({"gpu_budget": 8, "tp_degrees": [1],
                           "workloads": {"no-such-workload": {"demand_rps": 1.0, "slo": SLO}}})
        if backend.name == "openai" and backend.args.fixed_lengths is not None:
            pytest.skip("with fixed request lengths the live backend can serve any workload name")
        with pytest.raises(InputError):
            backend.validate(spec)
