"""The Backend protocol: how FleetSieve obtains one measurement of one cell.

Lifecycle: ``startup()`` once, ``validate(spec)`` before a campaign, ``measure(cell, ...)`` per
cell (possibly many times), ``shutdown()`` once. A backend is a plugin: a ``name`` plus a
pydantic ``Args`` model (``extra="forbid"``); only the name and the args are ever stored.

Contract every implementation keeps (checked by ``tests/backends/test_contract.py``):

* ``measure`` never raises for a run that went wrong. It returns a ``Measurement`` whose
  ``status`` is ``FAILED`` (with ``reason``) or ``ABORTED_INFEASIBLE``, and whose
  ``gpu_seconds`` is what the attempt really cost.
* Metric keys are vLLM's ``--save-result`` keys, latencies in ms.
* ``measure`` is deterministic for a given ``(cell, seed, repeat)`` when the backend is
  (replay, simulator); live backends are not.
* ``validate`` raises ``InputError`` when the spec names something the backend cannot
  measure (an unknown workload, a TP it has no data for).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Mapping

from pydantic import BaseModel, ConfigDict

from fleetsieve.records import Cell, Measurement
from fleetsieve.spec import FleetSpec


class BackendArgs(BaseModel):
    """Base for backend argument models: strict and frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Backend(ABC):
    """Obtains measurements. See the module docstring for the contract."""

    name: ClassVar[str]
    Args: ClassVar[type[BackendArgs]] = BackendArgs

    def __init__(self, args: BackendArgs | Mapping[str, Any] | None = None) -> None:
        self.args = args if isinstance(args, BackendArgs) else self.Args.model_validate(dict(args or {}))

    def startup(self) -> None:
        """Acquire resources (engines, connections). Default: nothing."""

    def validate(self, spec: FleetSpec) -> None:
        """Raise InputError when the spec cannot be measured by this backend. Default: accept."""

    @abstractmethod
    def measure(self, cell: Cell, *, seed: int = 0, repeat: int = 0,
                slo: Mapping[str, float] | None = None) -> Measurement:
        """Measure one cell. ``slo`` lets a backend abort a clearly infeasible run early."""

    def expected_gpu_seconds(self, cell: Cell) -> float | None:
        """What measuring ``cell`` is expected to cost, or None when unknown."""
        return None

    def shutdown(self) -> None:
        """Release resources. Default: nothing."""

    def __enter__(self) -> "Backend":
        self.startup()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
