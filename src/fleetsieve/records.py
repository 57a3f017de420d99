"""Frozen, typed domain records shared by every part of FleetSieve.

Storage rows (CSV, SQLite) are kept private to their modules; these records are
what crosses module boundaries.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping


class Status(str, enum.Enum):
    """Outcome of one measurement run. Failure is a value, never an exception."""

    OK = "OK"
    #: The run was stopped early because it was clearly infeasible (backlog or p99 over SLO).
    ABORTED_INFEASIBLE = "ABORTED_INFEASIBLE"
    #: The run produced no usable result (connection refused, 5xx, crash ...); see ``reason``.
    FAILED = "FAILED"


class Verdict(str, enum.Enum):
    """What the measurements of one cell say about its SLO feasibility."""

    FEASIBLE = "feasible"
    INFEASIBLE = "infeasible"
    #: Measured, but the evidence supports neither claim with the required confidence.
    INDETERMINATE = "indeterminate"
    UNMEASURED = "unmeasured"


@dataclass(frozen=True, order=True)
class Cell:
    """One measurement target: a workload served at ``tp`` GPUs per replica, offered ``load_rps`` per replica."""

    workload: str
    tp: int
    load_rps: float

    def to_dict(self) -> dict[str, Any]:
        return {"workload": self.workload, "tp": self.tp, "load_rps": self.load_rps}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Cell":
        return cls(str(data["workload"]), int(data["tp"]), float(data["load_rps"]))

    @property
    def config(self) -> tuple[str, int]:
        """The (workload, tp) configuration this cell belongs to."""
        return (self.workload, self.tp)


def _frozen_mapping(values: Mapping[str, float] | None) -> Mapping[str, float]:
    return MappingProxyType(dict(values or {}))


@dataclass(frozen=True)
class Measurement:
    """One measured run of a cell.

    ``metrics`` uses vLLM's ``--save-result`` keys (``p99_e2el_ms``, ``request_throughput`` ...).
    ``gpu_seconds`` is what the run cost (normally ``tp * duration_s``), also when it failed or
    was aborted early. ``extra`` keeps any further columns a grid row carried.
    """

    cell: Cell
    status: Status = Status.OK
    metrics: Mapping[str, float] = field(default_factory=dict)
    gpu_seconds: float = 0.0
    duration_s: float = 0.0
    repeat: int = 0
    num_requests: int = 0
    completed: int = 0
    reason: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "metrics", _frozen_mapping(self.metrics))
        object.__setattr__(self, "extra", MappingProxyType(dict(self.extra or {})))
        object.__setattr__(self, "status", Status(self.status))

    def metric(self, name: str) -> float:
        """The value of one metric, NaN when the run did not report it."""
        return float(self.metrics.get(name, math.nan))

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.cell.to_dict(),
            "status": self.status.value,
            "repeat": self.repeat,
            "duration_s": self.duration_s,
            "gpu_seconds": self.gpu_seconds,
            "num_requests": self.num_requests,
            "completed": self.completed,
            "reason": self.reason,
            "metrics": dict(self.metrics),
            "extra": dict(self.extra),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Measurement":
        return cls(
            cell=Cell.from_dict(data),
            status=Status(data.get("status", "OK")),
            metrics={k: float(v) for k, v in dict(data.get("metrics", {})).items()},
            gpu_seconds=float(data.get("gpu_seconds", 0.0)),
            duration_s=float(data.get("duration_s", 0.0)),
            repeat=int(data.get("repeat", 0)),
            num_requests=int(data.get("num_requests", 0)),
            completed=int(data.get("completed", 0)),
            reason=data.get("reason"),
            extra=dict(data.get("extra", {})),
        )


@dataclass(frozen=True)
class CapacityBounds:
    """What is proven about the SLO capacity ``kappa`` of one (workload, tp), in requests/s per replica.

    ``lo`` is proven feasible (0 when nothing is); ``hi`` is the highest level not yet proven
    infeasible. ``lo <= kappa <= hi`` under the monotone-in-load assumption.
    """

    lo: float
    hi: float

    @property
    def resolved(self) -> bool:
        return self.lo == self.hi


@dataclass(frozen=True)
class Assignment:
    """``replicas`` replicas of one workload, each on ``tp`` GPUs."""

    tp: int
    replicas: int

    @property
    def gpus(self) -> int:
        return self.tp * self.replicas


@dataclass(frozen=True)
class Objective:
    """The lexicographic objective: max-min fulfilment, then served requests/s, then fewest GPUs."""

    min_fulfilment: float
    served_rps: float
    gpus_used: int


@dataclass(frozen=True)
class Allocation:
    """Replicas per workload and the objective they reach under the capacities they were solved on."""

    assignments: Mapping[str, tuple[Assignment, ...]]
    objective: Objective

    def __post_init__(self) -> None:
        object.__setattr__(self, "assignments", MappingProxyType(dict(self.assignments)))

    @property
    def gpus_used(self) -> int:
        return sum(a.gpus for parts in self.assignments.values() for a in parts)

    def to_json(self, mixed: bool) -> dict[str, Any]:
        """The public JSON shape printed by ``plan`` and ``run``."""
        alloc: dict[str, Any] = {}
        for workload, parts in self.assignments.items():
            rows = [{"tp": a.tp, "replicas": a.replicas} for a in parts if a.replicas > 0]
            if mixed:
                alloc[workload] = rows
            else:
                alloc[workload] = rows[0] if rows else {"tp": None, "replicas": 0}
        return {
            "allocation": alloc,
            "min_fulfilment": self.objective.min_fulfilment,
            "served_rps": self.objective.served_rps,
            "gpus_used": self.gpus_used,
        }


@dataclass(frozen=True)
class Gap:
    """How far the guaranteed (conservative) objective may lie below the best possible one."""

    fulfilment: float
    served_rps: float

    def within(self, fulfilment_tol: float, served_tol: float) -> bool:
        return self.fulfilment <= fulfilment_tol + 1e-12 and self.served_rps <= served_tol + 1e-9


@dataclass(frozen=True)
class Decision:
    """The fleet decision from what is known so far.

    ``conservative`` is solved on the proven lower bounds, so its objective is guaranteed.
    ``optimistic`` bounds from above what any allocation can reach. ``certified`` is true when
    ``gap`` is within the spec's tolerance.
    """

    conservative: Allocation
    optimistic: Objective
    gap: Gap
    certified: bool
