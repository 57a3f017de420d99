"""Decision-unaware baselines that ignore the bounds: ``exhaustive`` and ``random``."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from fleetsieve.records import Cell
from fleetsieve.strategies.base import ProfilingState, Strategy


class Exhaustive(Strategy):
    """Every cell once, cheapest first (space order among equal costs); then done."""

    name: ClassVar[str] = "exhaustive"

    def propose(self, state: ProfilingState, n: int = 1) -> list[Cell]:
        space = state.knowledge.space
        todo = sorted(enumerate(state.unmeasured()), key=lambda ic: (space.cost(ic[1]), ic[0]))
        return [c for _, c in todo[:max(n, 0)]]


class RandomOrder(Strategy):
    """Every cell once in a uniformly random order fixed by the seed alone.

    The permutation depends only on ``state.seed``, so the strategy stays stateless: each call
    recomputes it and skips what is measured or in flight. It never stops early on its own.
    """

    name: ClassVar[str] = "random"

    def propose(self, state: ProfilingState, n: int = 1) -> list[Cell]:
        cells = state.knowledge.space.cells()
        order = np.random.default_rng(state.seed).permutation(len(cells))
        todo = (cells[i] for i in order if cells[i] not in state.knowledge.runs and cells[i] not in state.pending)
        return [c for _, c in zip(range(max(n, 0)), todo)]
