"""Grid format v1: round trip, version check, and one-line errors for bad rows."""

from __future__ import annotations

import math

import pytest

from fleetsieve.errors import InputError
from fleetsieve.grid import REQUIRED_COLUMNS, load_grid, parse_grid, write_grid
from fleetsieve.records import Cell, Measurement, Status


def row(**over) -> str:
    vals = {c: "1" for c in REQUIRED_COLUMNS}
    vals.update(workload="chat", tp="2", load_rps="0.5", repeat="0")
    vals.update({k: str(v) for k, v in over.items()})
    return ",".join(vals[c] for c in REQUIRED_COLUMNS)


HEADER = ",".join(REQUIRED_COLUMNS)


def test_round_trip_keeps_extra_columns_and_status(tmp_path):
    m = Measurement(Cell("chat", 2, 0.5), metrics={c: 1.5 for c in REQUIRED_COLUMNS[8:]}, gpu_seconds=600.0,
                    duration_s=300.0, repeat=1, num_requests=150, completed=149, extra={"seed": "7"})
    aborted = Measurement(Cell("chat", 2, 4.0), status=Status.ABORTED_INFEASIBLE, gpu_seconds=80.0, duration_s=40.0,
                          reason="backlog grew")
    path = tmp_path / "g.csv"
    write_grid([m, aborted], path)
    grid = load_grid(path)
    got = grid.runs(Cell("chat", 2, 0.5))[0]
    assert got.metrics["p99_e2el_ms"] == 1.5 and got.extra["seed"] == "7" and got.completed == 149
    assert grid.runs(Cell("chat", 2, 4.0))[0].status is Status.ABORTED_INFEASIBLE
    assert math.isnan(grid.runs(Cell("chat", 2, 4.0))[0].metric("p99_e2el_ms"))
    assert grid.runs(Cell("chat", 2, 4.0))[0].reason == "backlog grew"


def test_append_adds_rows(tmp_path):
    path = tmp_path / "g.csv"
    full = {c: 1.0 for c in REQUIRED_COLUMNS[8:]}
    write_grid([Measurement(Cell("a", 1, 1.0), metrics=full)], path)
    write_grid([Measurement(Cell("a", 1, 2.0), metrics=full)], path, append=True)
    assert len(load_grid(path).measurements) == 2


def test_levels_and_repeats():
    grid = parse_grid("\n".join([HEADER, row(repeat=0), row(repeat=1), row(load_rps=1.0)]))
    assert grid.levels("chat", 2) == [0.5, 1.0]
    assert [m.repeat for m in grid.runs(Cell("chat", 2, 0.5))] == [0, 1]


@pytest.mark.parametrize("text, needle", [
    (HEADER.replace(",p99_e2el_ms", "") + "\n", "missing column(s): p99_e2el_ms"),
    (HEADER + "\n" + row(p99_e2el_ms="nan"), "row 2: column 'p99_e2el_ms'"),
    (HEADER + "\n" + row(tp="two"), "row 2: column 'tp': not a number"),
    (HEADER + "\n" + row(status="WEIRD"), "unknown status"),
    ("# fleetsieve-grid-format: 9\n" + HEADER + "\n" + row(), "version '9' is not supported"),
    (HEADER + "\n", "no rows"),
])
def test_bad_grids_raise_one_line_errors(text, needle):
    if "status" in needle:
        text = text.replace(HEADER, HEADER + ",status")
        text = text.replace(row(status="WEIRD"), row() + ",WEIRD")
    with pytest.raises(InputError) as err:
        parse_grid(text, "g.csv")
    assert needle in str(err.value) and "\n" not in str(err.value)
