"""``fleetsieve compare``: replay every strategy over many reveal orders of a full grid."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from fleetsieve.errors import InputError
from fleetsieve.evaluate.compare import CompareOptions, CompareResult, run_compare, strategy_names, total_ticks
from fleetsieve.evaluate.experiment import registered_factories
from fleetsieve.evaluate.report import render, to_json
from fleetsieve.grid import load_grid
from fleetsieve.spec import load_spec
from fleetsieve.strategies import STRATEGIES


def _check(orders: int, workers: Optional[int]) -> None:
    if orders < 1:
        raise InputError("--orders", f"must be at least 1, got {orders}")
    if workers is not None and workers < 1:
        raise InputError("--workers", f"must be at least 1, got {workers}")


def _run(spec_path: Path, grid_path: Path, names: list[str], options: CompareOptions, quiet: bool) -> CompareResult:
    spec, grid = load_spec(spec_path), load_grid(grid_path)
    factories = registered_factories(strategy_names(names, list(STRATEGIES)))
    columns = (TextColumn("replaying orders"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), disable=quiet, transient=True) as progress:
        task = progress.add_task("orders", total=total_ticks(spec, options))
        return run_compare(spec, grid, factories, options, lambda: progress.advance(task))


def compare(
    spec_path: Path = typer.Argument(..., metavar="SPEC", help="fleet spec (TOML)"),
    grid_path: Path = typer.Option(..., "--grid", help="full measurement grid (CSV, format v1)"),
    orders: int = typer.Option(200, "--orders", help="random reveal orders per strategy"),
    seed: int = typer.Option(0, "--seed", help="seed of the reveal orders and the bootstrap"),
    strategies: list[str] = typer.Option([], "--strategy", "-s", help="strategy to compare (repeatable; default: all registered)"),
    json_out: Optional[Path] = typer.Option(None, "--json", help="write the results as JSON here"),
    plots: Optional[Path] = typer.Option(None, "--plots", help="write PNG plots into this directory"),
    noise_aware: Optional[bool] = typer.Option(None, "--noise-aware/--no-noise-aware", help="noise-aware verdicts (default: on when the grid has 3 repeats per cell)"),
    workers: Optional[int] = typer.Option(None, "--workers", help="worker processes (default: all cores)"),
    per_workload: bool = typer.Option(True, "--per-workload/--no-per-workload", help="also run each workload alone"),
    hindsight_limit_s: float = typer.Option(60.0, "--hindsight-limit-s", help="time for the exact certificate search"),
    quiet: bool = typer.Option(False, "--quiet", help="no progress bar"),
) -> None:
    """Compare profiling strategies on a full grid: cost to the oracle decision, savings vs random."""
    from fleetsieve.cli import fail

    options = CompareOptions(orders, seed, noise_aware, workers, per_workload, hindsight_limit_s)
    try:
        _check(orders, workers)
        result = _run(spec_path, grid_path, strategies, options, quiet)
    except InputError as err:
        raise fail(err) from None
    # piped output is read in files and logs: give the wide tables room instead of Rich's 80 columns
    Console(width=None if sys.stdout.isatty() else 180).print(render(result))
    if json_out is not None:
        json_out.write_text(json.dumps(to_json(result), indent=1))
    if plots is not None:
        from fleetsieve.evaluate.plots import write_plots  # matplotlib loads only when plots are asked for

        write_plots(result, plots)


def register(app: typer.Typer) -> None:
    """Add ``compare`` to the FleetSieve command line."""
    app.command("compare")(compare)
