"""The Store protocol: where a campaign keeps its setup, its proposals and their measurements.

A small abstract base (``Store``) with a handful of primitives; every convenience query
(``pending``, ``measurements``, ``gpu_seconds`` ...) is written once on top of them.

Contract every implementation keeps (checked by ``tests/store/test_contract.py``):

* ``save_setup`` is allowed once; ``load_setup`` returns it (None for a fresh store);
* ``add_proposal`` and ``add_result`` are each durable when they return (one atomic commit
  each), and what they stored is returned by ``proposals`` / ``results`` in insertion order;
* a proposal id is unique, and a proposal has at most one result: a second ``add_result`` for
  the same id raises ``InputError`` and changes nothing.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from fleetsieve.knowledge import CellSpace
from fleetsieve.records import Cell, Measurement

#: Bumped whenever the stored layout changes; a store refuses any other version.
SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Proposal:
    """One measurement the campaign asked for: ``cell``, its ``repeat`` index and the ``seed`` to run it with."""

    id: str
    index: int
    cell: Cell
    repeat: int
    seed: int

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "index": self.index, **self.cell.to_dict(), "repeat": self.repeat, "seed": self.seed}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Proposal":
        return cls(str(data["id"]), int(data["index"]), Cell.from_dict(data), int(data["repeat"]), int(data["seed"]))


def space_to_dict(space: CellSpace) -> dict[str, Any]:
    """A JSON form of a cell space (levels and costs), stored with the campaign."""
    levels = [{"workload": w, "tp": tp, "levels": list(lv)} for (w, tp), lv in sorted(space.levels.items())]
    costs = [{**c.to_dict(), "gpu_seconds": g} for c, g in sorted(space.cost_gpu_s.items())]
    return {"levels": levels, "costs": costs}


def space_from_dict(data: Mapping[str, Any]) -> CellSpace:
    levels = {(str(r["workload"]), int(r["tp"])): tuple(float(x) for x in r["levels"]) for r in data["levels"]}
    costs = {Cell.from_dict(r): float(r["gpu_seconds"]) for r in data["costs"]}
    return CellSpace(levels, costs)


@dataclass(frozen=True)
class CampaignSetup:
    """Everything that defines a campaign; compared field by field on resume.

    ``spec`` is ``spec_to_dict(FleetSpec)``; plugins are stored as a name and their args only.
    """

    spec: Mapping[str, Any]
    space: Mapping[str, Any]
    strategy: str
    strategy_args: Mapping[str, Any] = field(default_factory=dict)
    backend: str = ""
    backend_args: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 0
    #: How runs become verdicts: "plain" (every repeat meets the SLO) or "noise-aware".
    verdicts: str = "plain"

    def __post_init__(self) -> None:
        for name in ("spec", "space", "strategy_args", "backend_args"):
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))

    def to_dict(self) -> dict[str, Any]:
        return {"spec": _plain(self.spec), "space": _plain(self.space), "strategy": self.strategy,
                "strategy_args": _plain(self.strategy_args), "backend": self.backend,
                "backend_args": _plain(self.backend_args), "seed": self.seed, "verdicts": self.verdicts}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "CampaignSetup":
        return cls(data["spec"], data["space"], data["strategy"], data.get("strategy_args", {}),
                   data.get("backend", ""), data.get("backend_args", {}), int(data.get("seed", 0)),
                   str(data.get("verdicts", "plain")))  # setups stored before verdicts existed are plain


def _plain(value: Any) -> Any:
    """Mapping proxies and tuples turned back into JSON-serialisable dicts and lists."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


class Store(ABC):
    """Durable campaign state. See the module docstring for the contract."""

    #: Where the store lives, for messages (``sqlite:///c.db``, ``memory://``).
    url: str = "memory://"

    @abstractmethod
    def save_setup(self, setup: CampaignSetup) -> None:
        """Record the campaign's setup (once)."""

    @abstractmethod
    def load_setup(self) -> CampaignSetup | None:
        """The stored setup, or None when no campaign was started here."""

    @abstractmethod
    def add_proposal(self, proposal: Proposal) -> None:
        """Record a proposal before it is handed out."""

    @abstractmethod
    def add_result(self, proposal_id: str, measurement: Measurement) -> None:
        """Record the measurement of one proposal, atomically."""

    @abstractmethod
    def proposals(self) -> list[Proposal]:
        """Every proposal, in the order it was made."""

    @abstractmethod
    def results(self) -> list[tuple[str, Measurement]]:
        """Every (proposal id, measurement), in the order they were told."""

    def close(self) -> None:
        """Release the store's resources. Default: nothing."""

    # Helpers built on the primitives.

    def measurements(self) -> list[Measurement]:
        return [m for _, m in self.results()]

    def pending(self) -> list[Proposal]:
        """Proposals handed out whose measurement has not been told (in flight, or lost in a crash)."""
        done = {pid for pid, _ in self.results()}
        return [p for p in self.proposals() if p.id not in done]

    def proposal(self, proposal_id: str) -> Proposal | None:
        return next((p for p in self.proposals() if p.id == proposal_id), None)

    def has_result(self, proposal_id: str) -> bool:
        return any(pid == proposal_id for pid, _ in self.results())

    def gpu_seconds(self) -> float:
        return sum(m.gpu_seconds for m in self.measurements())

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
