"""Helpers shared by the strategies: open cells inside a configuration's bounds, run limits."""

from __future__ import annotations

from typing import Mapping

from fleetsieve.knowledge import Config
from fleetsieve.records import CapacityBounds, Cell
from fleetsieve.strategies.base import ProfilingState

#: A cell whose runs all failed (or stayed indeterminate) this many times is not proposed again,
#: so a broken cell cannot keep a campaign busy forever.
DEFAULT_MAX_RUNS_PER_CELL = 3


def open_levels(state: ProfilingState, config: Config, bounds: CapacityBounds, max_runs: int) -> list[float]:
    """Levels of ``config`` strictly above ``lo`` and at most ``hi`` that are still open, ascending."""
    w, tp = config
    return [L for L in state.knowledge.space.levels[config]
            if bounds.lo < L <= bounds.hi and state.undecided(Cell(w, tp, L), max_runs)]


def unresolved(bounds: Mapping[Config, CapacityBounds]) -> list[Config]:
    return [cfg for cfg, b in sorted(bounds.items()) if not b.resolved]
