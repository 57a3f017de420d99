"""The measurement grid: a long-form CSV, one row per measured run.

Format version 1 (documented in the README). The first line may be the comment
``# fleetsieve-grid-format: 1``; our writers always emit it, and a reader rejects any other
version. Required columns are ``REQUIRED_COLUMNS``; extra columns are kept in
``Measurement.extra`` and otherwise ignored. An optional ``status`` column carries
``OK`` / ``ABORTED_INFEASIBLE`` / ``FAILED`` (default ``OK``).
"""

from __future__ import annotations

import csv
import io
import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from fleetsieve.errors import InputError
from fleetsieve.metrics import GRID_METRIC_COLUMNS, SLO_METRICS
from fleetsieve.records import Cell, Measurement, Status

GRID_FORMAT_VERSION = 1
VERSION_PREFIX = "# fleetsieve-grid-format:"

ID_COLUMNS = ("workload", "tp", "load_rps", "repeat")
COST_COLUMNS = ("duration_s", "gpu_seconds", "num_requests", "completed")
REQUIRED_COLUMNS: tuple[str, ...] = ID_COLUMNS + COST_COLUMNS + GRID_METRIC_COLUMNS
_INT_COLUMNS = {"tp", "repeat", "num_requests", "completed"}


@dataclass(frozen=True)
class Grid:
    """All measured runs, indexed by cell. Immutable once loaded."""

    measurements: tuple[Measurement, ...]
    source: str = "grid"
    _by_cell: dict[Cell, tuple[Measurement, ...]] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        groups: dict[Cell, list[Measurement]] = defaultdict(list)
        for m in self.measurements:
            groups[m.cell].append(m)
        object.__setattr__(self, "_by_cell", {c: tuple(sorted(ms, key=lambda m: m.repeat)) for c, ms in groups.items()})

    def cells(self) -> list[Cell]:
        return sorted(self._by_cell)

    @property
    def max_runs_per_cell(self) -> int:
        """The most runs (repeats) any one cell has; 0 for an empty grid."""
        return max((len(runs) for runs in self._by_cell.values()), default=0)

    def runs(self, cell: Cell) -> tuple[Measurement, ...]:
        """Every repeat measured for ``cell`` (empty when it was never measured)."""
        return self._by_cell.get(cell, ())

    def workloads(self) -> list[str]:
        return sorted({c.workload for c in self._by_cell})

    def tps(self, workload: str | None = None) -> list[int]:
        return sorted({c.tp for c in self._by_cell if workload in (None, c.workload)})

    def levels(self, workload: str, tp: int) -> list[float]:
        """Load levels (requests/s per replica) present for one configuration, ascending."""
        return sorted({c.load_rps for c in self._by_cell if c.workload == workload and c.tp == tp})

    def metric_names(self) -> set[str]:
        names: set[str] = set()
        for m in self.measurements:
            names.update(k for k, v in m.metrics.items() if not math.isnan(v))
        return names

    @property
    def total_gpu_seconds(self) -> float:
        return sum(m.gpu_seconds for m in self.measurements)


def _parse_value(column: str, text: str, where: str) -> float | int:
    try:
        value = float(text)
    except ValueError:
        raise InputError(where, f"column {column!r}: not a number: {text!r}") from None
    if math.isnan(value) or math.isinf(value):
        raise InputError(where, f"column {column!r}: {text} is not a finite number")
    if column in _INT_COLUMNS:
        if value != int(value):
            raise InputError(where, f"column {column!r}: expected an integer, got {text!r}")
        return int(value)
    return value


def _parse_status(row: dict[str, str], where: str) -> Status:
    status_text = (row.get("status") or "OK").strip() or "OK"
    try:
        return Status(status_text)
    except ValueError:
        raise InputError(where, f"column 'status': unknown status {status_text!r}") from None


def _parse_metric(column: str, text: str, status: Status, where: str) -> float:
    # A failed or aborted run may lack metrics; an OK run must report every one.
    if status is not Status.OK and text.strip().lower() in ("", "nan"):
        return math.nan
    return float(_parse_value(column, text.strip(), where))


def _extra_slo_metrics(row: dict[str, str], status: Status, where: str) -> dict[str, float]:
    """Optional latency columns (e.g. ``median_ttft_ms``) that an SLO may name."""
    return {c: _parse_metric(c, row.get(c) or "", status, where) for c in row if c in SLO_METRICS and c not in GRID_METRIC_COLUMNS}


def _row_to_measurement(row: dict[str, str], where: str) -> Measurement:
    status = _parse_status(row, where)
    id_cost = [c for c in ID_COLUMNS + COST_COLUMNS if c != "workload"]
    vals = {c: _parse_value(c, (row.get(c) or "").strip(), where) for c in id_cost}
    vals.update({c: _parse_metric(c, row.get(c) or "", status, where) for c in GRID_METRIC_COLUMNS})
    workload = (row.get("workload") or "").strip()
    if not workload:
        raise InputError(where, "column 'workload': empty")
    if vals["tp"] <= 0 or vals["load_rps"] <= 0:
        raise InputError(where, "tp and load_rps must be positive")
    known = set(REQUIRED_COLUMNS) | {"status", "reason"}
    return Measurement(
        cell=Cell(workload, int(vals["tp"]), float(vals["load_rps"])),
        status=status,
        metrics={**_extra_slo_metrics(row, status, where), **{c: float(vals[c]) for c in GRID_METRIC_COLUMNS}},
        gpu_seconds=float(vals["gpu_seconds"]), duration_s=float(vals["duration_s"]),
        repeat=int(vals["repeat"]), num_requests=int(vals["num_requests"]), completed=int(vals["completed"]),
        reason=(row.get("reason") or None),
        extra={k: v for k, v in row.items() if k not in known and k is not None},
    )


def _split_version(text: str, source: str) -> str:
    first, _, rest = text.partition("\n")
    if not first.startswith("#"):
        return text
    if not first.startswith(VERSION_PREFIX):
        raise InputError(f"{source}: line 1", "unexpected comment line; expected '# fleetsieve-grid-format: N'")
    version = first[len(VERSION_PREFIX):].strip()
    if version != str(GRID_FORMAT_VERSION):
        raise InputError(f"{source}: line 1", f"grid format version {version!r} is not supported (this is version {GRID_FORMAT_VERSION})")
    return rest


def parse_grid(text: str, source: str = "grid") -> Grid:
    """Parse grid CSV text; raises InputError naming the row and column on any problem."""
    body = _split_version(text, source)
    offset = 1 if body is not text else 0
    reader = csv.DictReader(io.StringIO(body))
    missing = [c for c in REQUIRED_COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise InputError(source, f"missing column(s): {', '.join(missing)}")
    rows = [
        _row_to_measurement(row, f"{source}: row {i + offset + 2}")
        for i, row in enumerate(reader)
    ]
    if not rows:
        raise InputError(source, "the grid has no rows")
    return Grid(tuple(rows), source)


def load_grid(path: str | Path) -> Grid:
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise InputError(str(path), "file not found") from None
    return parse_grid(text, str(path))


def measurement_to_row(m: Measurement) -> dict[str, object]:
    """The grid row of one measurement (extra columns included)."""
    row: dict[str, object] = {
        "workload": m.cell.workload, "tp": m.cell.tp, "load_rps": m.cell.load_rps, "repeat": m.repeat,
        "duration_s": m.duration_s, "gpu_seconds": m.gpu_seconds,
        "num_requests": m.num_requests, "completed": m.completed,
    }
    row.update({c: m.metrics.get(c, math.nan) for c in GRID_METRIC_COLUMNS})
    row["status"] = m.status.value
    row.update(m.extra)
    if m.reason:
        row["reason"] = m.reason
    return row


def write_grid(measurements: Iterable[Measurement], path: str | Path, append: bool = False) -> None:
    """Write (or append) measurements as a version-1 grid CSV, atomically."""
    path = Path(path)
    previous = load_grid(path).measurements if append and path.exists() and path.stat().st_size > 0 else ()
    rows = [measurement_to_row(m) for m in (*previous, *measurements)]
    buf = io.StringIO()
    buf.write(f"{VERSION_PREFIX} {GRID_FORMAT_VERSION}\n")
    writer = csv.DictWriter(buf, fieldnames=_columns(rows), extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(buf.getvalue())
    tmp.replace(path)  # a crash never leaves a half-written grid


def _columns(rows: Sequence[dict[str, object]]) -> list[str]:
    columns = list(REQUIRED_COLUMNS) + ["status", "reason"]
    for row in rows:
        columns += [k for k in row if k not in columns]
    return columns


def iter_configs(grid: Grid) -> Iterator[tuple[str, int]]:
    """Every (workload, tp) present in the grid."""
    yield from sorted({c.config for c in grid.cells()})
