"""Build a measurement grid with the simulator: every (workload, tp, level, repeat), in parallel.

Levels come from the spec (``load_rps``, a list or a table keyed by TP). A TP at which the model
does not fit yields ``ABORTED_INFEASIBLE`` rows ("model does not fit") rather than an error.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Callable, Iterable

from fleetsieve.backends.simulated import SimulatedArgs, simulate_cell
from fleetsieve.errors import InputError
from fleetsieve.grid import write_grid
from fleetsieve.records import Cell, Measurement
from fleetsieve.spec import FleetSpec

Task = tuple[SimulatedArgs, Cell, int, int]


def grid_tasks(spec: FleetSpec, args: SimulatedArgs, *, repeats: int = 3, seed: int = 0) -> list[Task]:
    """Every run the grid needs, costliest first (so parallel workers finish together)."""
    if repeats < 1:
        raise InputError("--repeats", "must be >= 1")
    tasks = []
    for name, workload in spec.workloads.items():
        for tp in spec.tp_degrees:
            levels = workload.levels_for(tp)
            if not levels:
                raise InputError(f"workloads.{name}.load_rps", f"no load levels for TP {tp}; give load_rps per TP")
            tasks += [(args, Cell(name, tp, float(level)), seed, r) for level in levels for r in range(repeats)]
    return sorted(tasks, key=lambda t: -t[1].load_rps * t[1].tp)


def _run(task: Task) -> dict:
    """One run in a worker; returned as a plain dict (records hold read-only mappings that do not pickle)."""
    args, cell, seed, repeat = task
    return simulate_cell(args, cell, seed, repeat).to_dict()


def build_grid(tasks: list[Task], out: str | Path, *, workers: int | None = None,
               on_done: Callable[[Measurement], None] | None = None) -> list[Measurement]:
    """Run ``tasks`` over ``workers`` processes (default: all cores) and write the grid CSV."""
    workers = workers or os.cpu_count() or 1
    results = list(_execute(tasks, workers, on_done or (lambda m: None)))
    results.sort(key=lambda m: (m.cell.workload, m.cell.tp, m.cell.load_rps, m.repeat))
    write_grid(results, out)
    return results


def _execute(tasks: list[Task], workers: int, on_done: Callable[[Measurement], None]) -> Iterable[Measurement]:
    if workers == 1:
        for task in tasks:
            m = Measurement.from_dict(_run(task))
            on_done(m)
            yield m
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(_run, task) for task in tasks]
        try:
            for future in as_completed(futures):
                m = Measurement.from_dict(future.result())
                on_done(m)
                yield m
        finally:
            for future in futures:
                future.cancel()
