"""Decision-unaware baselines that ignore the bounds: ``exhaustive`` and ``random``.

Both measure every cell. A cell whose verdict stays indeterminate (noise-aware verdicts) is
measured again right away, up to ``max_runs_per_cell`` runs: the paper's boundary repeats. Under
the plain rule no cell is indeterminate, so each is measured once.
"""

from __future__ import annotations

from typing import ClassVar, Iterable

import numpy as np
from pydantic import Field

from fleetsieve.records import Cell
from fleetsieve.strategies._common import DEFAULT_MAX_RUNS_PER_CELL
from fleetsieve.strategies.base import ProfilingState, Strategy, StrategyArgs


class BaselineArgs(StrategyArgs):
    max_runs_per_cell: int = Field(default=DEFAULT_MAX_RUNS_PER_CELL, ge=1)


def _first_undecided(state: ProfilingState, cells: Iterable[Cell], n: int, max_runs: int) -> list[Cell]:
    todo = (c for c in cells if state.undecided(c, max_runs))
    return [c for _, c in zip(range(max(n, 0)), todo)]


class Exhaustive(Strategy):
    """Every cell, cheapest first (space order among equal costs); then done."""

    name: ClassVar[str] = "exhaustive"
    Args: ClassVar[type[StrategyArgs]] = BaselineArgs
    stops_on_its_own: ClassVar[bool] = False

    def propose(self, state: ProfilingState, n: int = 1) -> list[Cell]:
        space = state.knowledge.space
        ordered = [c for _, c in sorted(enumerate(space.cells()), key=lambda ic: (space.cost(ic[1]), ic[0]))]
        return _first_undecided(state, ordered, n, self.args.max_runs_per_cell)


class RandomOrder(Strategy):
    """Every cell in a uniformly random order fixed by the seed alone.

    The permutation depends only on ``state.seed``, so the strategy stays stateless: each call
    recomputes it and skips what is decided or in flight. It never stops early on its own.
    """

    name: ClassVar[str] = "random"
    Args: ClassVar[type[StrategyArgs]] = BaselineArgs
    stops_on_its_own: ClassVar[bool] = False

    def propose(self, state: ProfilingState, n: int = 1) -> list[Cell]:
        cells = state.knowledge.space.cells()
        order = np.random.default_rng(state.seed).permutation(len(cells))
        return _first_undecided(state, (cells[i] for i in order), n, self.args.max_runs_per_cell)
