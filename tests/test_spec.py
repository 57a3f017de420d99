"""Fleet spec validation."""

from __future__ import annotations

import pytest

from fleetsieve.errors import InputError
from fleetsieve.spec import load_spec, parse_spec

BASE = {"gpu_budget": 16, "workloads": {"chat": {"demand_rps": 6.0, "slo": {"p99_e2el_ms": 30000}}}}


def test_defaults():
    spec = parse_spec(BASE)
    assert spec.tp_degrees == [1, 2, 4, 8] and spec.saturation_tol == 0.05 and not spec.mixed
    assert spec.tolerance.fulfilment == 0.01 and spec.tolerance.served_rps == 0.05


def test_per_tp_load_levels():
    spec = parse_spec({**BASE, "workloads": {"chat": {"demand_rps": 1, "slo": {"p99_ttft_ms": 1}, "load_rps": {"1": [2, 1], "2": [4]}}}})
    assert spec.workloads["chat"].levels_for(1) == [1.0, 2.0] and spec.workloads["chat"].levels_for(4) is None


@pytest.mark.parametrize("bad, needle", [
    ({**BASE, "gpus": 3}, "gpus: unknown key"),
    ({**BASE, "workloads": {"chat": {"demand_rps": -1, "slo": {"p99_e2el_ms": 1}}}}, "workloads.chat.demand_rps"),
    ({**BASE, "workloads": {"chat": {"demand_rps": 1, "slo": {"p99_latency": 1}}}}, "unknown SLO metric 'p99_latency'"),
    ({**BASE, "tp_degrees": [1, 1]}, "distinct"),
    ({**BASE, "gpu_budget": 0}, "gpu_budget"),
])
def test_bad_specs(bad, needle):
    with pytest.raises(InputError) as err:
        parse_spec(bad, "f.toml")
    assert needle in str(err.value) and str(err.value).startswith("f.toml")


def test_invalid_toml(tmp_path):
    path = tmp_path / "f.toml"
    path.write_text("gpu_budget = = 3")
    with pytest.raises(InputError, match="invalid TOML"):
        load_spec(path)
