"""The replay backend: seeded, distinct choice among a cell's repeats; missing cells fail as a value."""

from __future__ import annotations

import pytest

from fleetsieve.backends import make_backend
from fleetsieve.backends.replay import ReplayBackend
from fleetsieve.errors import InputError
from fleetsieve.grid import write_grid
from fleetsieve.metrics import GRID_METRIC_COLUMNS
from fleetsieve.records import Cell, Measurement, Status
from fleetsieve.spec import parse_spec

CELL = Cell("chat", 1, 1.0)


@pytest.fixture
def repeats_grid(tmp_path):
    """One cell with five repeats whose p99 tells them apart."""
    runs = [Measurement(CELL, metrics={**dict.fromkeys(GRID_METRIC_COLUMNS, 1.0), "p99_e2el_ms": 100.0 + r},
                        gpu_seconds=300.0 + r,
                        duration_s=300.0, repeat=r) for r in range(5)]
    path = tmp_path / "grid.csv"
    write_grid(runs, path)
    return path


def test_repeats_are_distinct_rows_until_they_wrap(repeats_grid):
    b = ReplayBackend({"grid": str(repeats_grid)})
    picked = [b.measure(CELL, seed=11, repeat=r).metric("p99_e2el_ms") for r in range(10)]
    assert sorted(picked[:5]) == [100.0, 101.0, 102.0, 103.0, 104.0]
    assert picked[5:] == picked[:5]


def test_same_seed_same_row_and_seeds_differ(repeats_grid):
    b = ReplayBackend({"grid": str(repeats_grid)})
    again = ReplayBackend({"grid": str(repeats_grid)})
    assert b.measure(CELL, seed=3, repeat=2) == again.measure(CELL, seed=3, repeat=2)
    orders = {tuple(b.measure(CELL, seed=s, repeat=r).metric("p99_e2el_ms") for r in range(5)) for s in range(8)}
    assert len(orders) > 1


def test_measurement_carries_the_requested_repeat_and_the_grid_row(repeats_grid):
    m = ReplayBackend({"grid": str(repeats_grid)}).measure(CELL, seed=0, repeat=7)
    assert m.repeat == 7 and m.metric("p99_e2el_ms") == 100.0 + m.extra["grid_repeat"]
    assert m.gpu_seconds == 300.0 + m.extra["grid_repeat"]


def test_missing_cell_is_a_failed_measurement(repeats_grid):
    m = ReplayBackend({"grid": str(repeats_grid)}).measure(Cell("chat", 1, 99.0), repeat=1)
    assert m.status is Status.FAILED and "no row" in m.reason and m.gpu_seconds == 0.0 and m.repeat == 1


def test_expected_cost_is_the_mean_of_the_rows(repeats_grid):
    b = ReplayBackend({"grid": str(repeats_grid)})
    assert b.expected_gpu_seconds(CELL) == 302.0 and b.expected_gpu_seconds(Cell("x", 1, 1.0)) is None


def test_validate_names_what_the_grid_lacks(repeats_grid):
    b = ReplayBackend({"grid": str(repeats_grid)})
    spec = parse_spec({"gpu_budget": 4, "tp_degrees": [1, 2], "workloads": {"chat": {"demand_rps": 1, "slo": {"p99_e2el_ms": 500}}}})
    with pytest.raises(InputError, match="TP degree 2"):
        b.validate(spec)


def test_registry_and_bad_args(repeats_grid, tmp_path):
    assert isinstance(make_backend("replay", {"grid": str(repeats_grid)}), ReplayBackend)
    with pytest.raises(InputError, match="grid: unknown option|colour: unknown option"):
        make_backend("replay", {"grid": str(repeats_grid), "colour": 1})
    with pytest.raises(InputError, match="file not found"):
        make_backend("replay", {"grid": str(tmp_path / "none.csv")}).startup()
    with pytest.raises(InputError, match="unknown backend 'nope'"):
        make_backend("nope")
