"""FleetSieve: decision-critical profiling for LLM serving fleets."""

from fleetsieve.allocate import evaluate, solve
from fleetsieve.errors import InputError
from fleetsieve.grid import GRID_FORMAT_VERSION, Grid, load_grid, parse_grid, write_grid
from fleetsieve.knowledge import CellSpace, Knowledge, decide
from fleetsieve.plan import oracle_allocation
from fleetsieve.records import (
    Allocation, Assignment, CapacityBounds, Cell, Decision, Gap, Measurement, Objective, Status, Verdict,
)
from fleetsieve.spec import FleetSpec, load_spec

__version__ = "0.1.0"

__all__ = [
    "Allocation", "Assignment", "CapacityBounds", "Cell", "CellSpace", "Decision", "FleetSpec", "Gap",
    "GRID_FORMAT_VERSION", "Grid", "InputError", "Knowledge", "Measurement", "Objective", "Status", "Verdict",
    "decide", "evaluate", "load_grid", "load_spec", "oracle_allocation", "parse_grid", "solve", "write_grid",
]
