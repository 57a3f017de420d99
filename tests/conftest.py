"""Shared fixtures: small specs and grids written to tmp files."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SYNTHETIC = REPO / "examples" / "synthetic"


@pytest.fixture
def synthetic_spec() -> Path:
    return SYNTHETIC / "fleet.toml"


@pytest.fixture
def synthetic_grid() -> Path:
    return SYNTHETIC / "grid.csv"
