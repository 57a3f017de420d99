"""The ``replay`` backend: answers each measurement from a grid file of earlier runs.

A cell with several repeats in the grid is answered by a seeded permutation of its rows:
repeat ``r`` of a cell under seed ``s`` is always the same row, and repeats ``0..k-1`` are
``k`` distinct rows (after that the permutation wraps). A cell the grid lacks comes back as a
``FAILED`` measurement costing nothing.
"""

from __future__ import annotations

import dataclasses
import hashlib
from statistics import fmean
from typing import Mapping

import numpy as np
from pydantic import Field

from fleetsieve.backends.base import Backend, BackendArgs
from fleetsieve.grid import Grid, load_grid
from fleetsieve.plan import validate_grid
from fleetsieve.records import Cell, Measurement, Status
from fleetsieve.spec import FleetSpec


class ReplayArgs(BackendArgs):
    grid: str = Field(description="path of the grid CSV (format v1) to replay")


def _cell_key(cell: Cell) -> int:
    """A stable integer per cell (Python's hash() of a str changes between processes)."""
    digest = hashlib.sha256(f"{cell.workload}|{cell.tp}|{cell.load_rps!r}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


class ReplayBackend(Backend):
    """Replays measured runs from a grid. Deterministic for a given (cell, seed, repeat)."""

    name = "replay"
    Args = ReplayArgs

    def __init__(self, args=None) -> None:
        super().__init__(args)
        self._grid: Grid | None = None

    @property
    def grid(self) -> Grid:
        if self._grid is None:
            self._grid = load_grid(self.args.grid)
        return self._grid

    def startup(self) -> None:
        _ = self.grid

    def validate(self, spec: FleetSpec) -> None:
        validate_grid(spec, self.grid)

    def measure(self, cell: Cell, *, seed: int = 0, repeat: int = 0,
                slo: Mapping[str, float] | None = None) -> Measurement:
        runs = self.grid.runs(cell)
        if not runs:
            return Measurement(cell, Status.FAILED, repeat=repeat, reason=f"{self.grid.source} has no row for {cell}")
        order = np.random.default_rng([seed % 2**63, _cell_key(cell)]).permutation(len(runs))
        row = runs[int(order[repeat % len(runs)])]
        return dataclasses.replace(row, repeat=repeat, extra={**row.extra, "grid_repeat": row.repeat})

    def expected_gpu_seconds(self, cell: Cell) -> float | None:
        runs = self.grid.runs(cell)
        return fmean(m.gpu_seconds for m in runs) if runs else None
