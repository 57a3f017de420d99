"""The fleet spec: GPU budget, candidate TP degrees, workloads with demands and SLOs, tolerances.

Written by users in TOML; validated strictly (unknown keys are errors) so a typo never
silently changes a decision.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from fleetsieve.errors import InputError
from fleetsieve.metrics import SLO_METRICS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class WorkloadSpec(_Strict):
    """One workload: its demand, its SLOs (metric key -> upper bound) and optional load levels."""

    demand_rps: float = Field(gt=0, description="offered demand, requests/s")
    slo: dict[str, float] = Field(min_length=1, description="vLLM metric key -> upper bound (ms)")
    #: Per-replica offered load levels, requests/s. A list applies to every TP; a table keyed by
    #: TP degree (``{"1" = [...], "2" = [...]}``) gives levels per TP. Default: the grid's levels.
    load_rps: list[float] | dict[int, list[float]] | None = None

    @field_validator("slo")
    @classmethod
    def _known_metrics(cls, slo: dict[str, float]) -> dict[str, float]:
        for key, bound in slo.items():
            if key not in SLO_METRICS:
                raise ValueError(f"unknown SLO metric {key!r} (use vLLM keys such as p99_e2el_ms)")
            if not (bound > 0 and math.isfinite(bound)):
                raise ValueError(f"SLO bound for {key} must be a positive number, got {bound}")
        return slo

    def levels_for(self, tp: int) -> list[float] | None:
        """The spec's load levels for one TP degree, or None to use the grid's."""
        if self.load_rps is None:
            return None
        if isinstance(self.load_rps, dict):
            return sorted(self.load_rps.get(tp, [])) or None
        return sorted(self.load_rps)


class Tolerance(_Strict):
    """When the decision gap is small enough to stop profiling."""

    fulfilment: float = Field(default=0.01, ge=0, description="max-min fulfilment, absolute")
    served_rps: float = Field(default=0.05, ge=0, description="aggregate served requests/s")


class FleetSpec(_Strict):
    """Everything the allocator needs besides capacities."""

    gpu_budget: int = Field(gt=0)
    tp_degrees: list[int] = Field(default_factory=lambda: [1, 2, 4, 8], min_length=1)
    mixed: bool = False
    saturation_tol: float = Field(default=0.05, ge=0, lt=1)
    workloads: dict[str, WorkloadSpec] = Field(min_length=1)
    tolerance: Tolerance = Field(default_factory=Tolerance)

    @field_validator("tp_degrees")
    @classmethod
    def _positive_unique(cls, tps: list[int]) -> list[int]:
        if any(tp <= 0 for tp in tps) or len(set(tps)) != len(tps):
            raise ValueError("tp_degrees must be distinct positive integers")
        return sorted(tps)

    @property
    def slo_metrics(self) -> set[str]:
        return {key for w in self.workloads.values() for key in w.slo}

    def restricted_to(self, workload: str) -> "FleetSpec":
        """The same spec with a single workload (same budget), for per-workload experiments."""
        return self.model_copy(update={"workloads": {workload: self.workloads[workload]}})


def _describe(err: ValidationError) -> str:
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first["loc"]) or "(top level)"
    msg = first["msg"]
    if first["type"] == "extra_forbidden":
        msg = "unknown key"
    return f"{loc}: {msg}"


def parse_spec(data: Mapping[str, Any], source: str = "spec") -> FleetSpec:
    """Validate a spec mapping; raises InputError with a one-line message."""
    try:
        return FleetSpec.model_validate(dict(data))
    except ValidationError as err:
        raise InputError(source, _describe(err)) from None


def load_spec(path: str | Path) -> FleetSpec:
    """Read and validate a TOML fleet spec."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise InputError(str(path), "file not found") from None
    except tomllib.TOMLDecodeError as err:
        raise InputError(str(path), f"invalid TOML: {err}") from None
    return parse_spec(data, str(path))


def spec_to_dict(spec: FleetSpec) -> dict[str, Any]:
    """A JSON-serialisable form of the spec (stored with campaigns, compared on resume)."""
    return spec.model_dump(mode="json")
