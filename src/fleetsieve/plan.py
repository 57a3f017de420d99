"""The full-grid ("oracle") decision, and the checks that tie a grid to a spec."""

from __future__ import annotations

from statistics import fmean

from fleetsieve.allocate import solve
from fleetsieve.errors import InputError
from fleetsieve.grid import Grid
from fleetsieve.knowledge import CellSpace, VerdictRule, all_repeats_rule, true_capacities
from fleetsieve.records import Allocation, Cell, Status
from fleetsieve.spec import FleetSpec


def validate_grid(spec: FleetSpec, grid: Grid) -> None:
    """Raise InputError when the grid cannot answer the spec's questions."""
    for w in spec.workloads:
        if w not in grid.workloads():
            raise InputError(grid.source, f"workload {w!r} from the spec has no rows (grid has: {', '.join(grid.workloads())})")
        for tp in spec.tp_degrees:
            if not grid.levels(w, tp):
                raise InputError(grid.source, f"TP degree {tp} from the spec has no rows for workload {w!r}")
    ok_metrics = {k for m in grid.measurements if m.status is Status.OK for k in m.metrics}
    for key in sorted(spec.slo_metrics - ok_metrics):
        raise InputError(grid.source, f"SLO metric {key!r} is not a column of the grid")


def space_from_grid(spec: FleetSpec, grid: Grid) -> CellSpace:
    """The cells a replay campaign may reveal: spec levels if given, else the grid's own."""
    validate_grid(spec, grid)
    levels: dict[tuple[str, int], tuple[float, ...]] = {}
    for w, wl in spec.workloads.items():
        for tp in spec.tp_degrees:
            present = grid.levels(w, tp)
            wanted = wl.levels_for(tp) or present
            missing = [L for L in wanted if L not in present]
            if missing:
                raise InputError(grid.source, f"load level {missing[0]} of workload {w!r} at TP {tp} has no rows")
            levels[(w, tp)] = tuple(wanted)
    costs = {c: fmean(m.gpu_seconds for m in grid.runs(c)) for cfg, lv in levels.items() for c in (Cell(*cfg, L) for L in lv)}
    return CellSpace(levels, costs)


def oracle_allocation(spec: FleetSpec, grid: Grid, verdict_rule: VerdictRule = all_repeats_rule) -> Allocation:
    """The decision exhaustive profiling reaches: the exact optimum on the full grid's capacities."""
    space = space_from_grid(spec, grid)
    kappa = true_capacities(spec, space, grid.measurements, verdict_rule)
    demands = {w: wl.demand_rps for w, wl in spec.workloads.items()}
    return solve(demands, kappa, spec.gpu_budget, mixed=spec.mixed)


def oracle_capacities(spec: FleetSpec, grid: Grid, verdict_rule: VerdictRule = all_repeats_rule) -> dict[tuple[str, int], float]:
    return true_capacities(spec, space_from_grid(spec, grid), grid.measurements, verdict_rule)
