"""The Strategy protocol: which cell to measure next.

A strategy keeps no history of its own. It reads the campaign's state (``ProfilingState``:
the knowledge so far, the cells in flight, a seed) and returns the next cells to measure, or an
empty list when it is done. Re-measuring an already measured cell (buying a repeat) is allowed.

Contract every implementation keeps (checked by ``tests/strategies/test_contract.py``):

* ``propose(state, n)`` returns at most ``n`` distinct cells from ``state.knowledge.space``,
  none of them in ``state.pending``;
* it is deterministic for a given state (including ``seed``);
* it never raises for a valid state; it returns ``[]`` when it has nothing useful left;
* the recommendation is not the strategy's business: every strategy's recommendation is the
  conservative allocation of the same bounds (``state.knowledge.decision().conservative``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Mapping

from pydantic import BaseModel, ConfigDict

from fleetsieve.knowledge import Knowledge
from fleetsieve.records import Cell, Verdict


class StrategyArgs(BaseModel):
    """Base for strategy argument models: strict and frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True)
class ProfilingState:
    """Everything a strategy may read."""

    knowledge: Knowledge
    pending: frozenset[Cell] = field(default_factory=frozenset)
    seed: int = 0

    def unmeasured(self) -> list[Cell]:
        """Cells never measured and not in flight, in the space's order."""
        return [c for c in self.knowledge.space.cells() if c not in self.knowledge.runs and c not in self.pending]

    def undecided(self, cell: Cell, max_runs: int, verdict: Callable[[Cell], Verdict] | None = None) -> bool:
        """Not in flight, under ``max_runs`` runs, and unmeasured or still indeterminate by
        ``verdict`` (default: the knowledge's own verdicts)."""
        if cell in self.pending or len(self.knowledge.runs.get(cell, ())) >= max_runs:
            return False
        return (verdict or self.knowledge.verdict)(cell) in (Verdict.UNMEASURED, Verdict.INDETERMINATE)


class Strategy(ABC):
    """Chooses cells to measure. See the module docstring for the contract."""

    name: ClassVar[str]
    Args: ClassVar[type[StrategyArgs]] = StrategyArgs
    #: False for strategies that ignore the certificate (they would run on for ever); a campaign
    #: using one stops at the first certificate instead of at the strategy's own ``[]``.
    stops_on_its_own: ClassVar[bool] = True

    def __init__(self, args: StrategyArgs | Mapping[str, Any] | None = None) -> None:
        self.args = args if isinstance(args, StrategyArgs) else self.Args.model_validate(dict(args or {}))

    @abstractmethod
    def propose(self, state: ProfilingState, n: int = 1) -> list[Cell]:
        """Up to ``n`` cells to measure next; ``[]`` when done."""

    def next_cell(self, state: ProfilingState) -> Cell | None:
        """The single next cell, or None when done."""
        cells = self.propose(state, 1)
        return cells[0] if cells else None
