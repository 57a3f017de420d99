"""The ``fleetsieve`` command line (Typer + Rich).

Core commands live here; each feature package contributes its commands through a
``register(app)`` function listed in ``COMMAND_MODULES`` (the one place commands are registered).
Bad input is reported as one line on stderr with exit code 2, never a traceback.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from fleetsieve.errors import InputError
from fleetsieve.grid import load_grid
from fleetsieve.knowledge import all_repeats_rule
from fleetsieve.plan import oracle_allocation, oracle_capacities
from fleetsieve.records import Allocation
from fleetsieve.spec import FleetSpec, load_spec

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="FleetSieve: profile only what changes the fleet decision.")
console = Console()


@app.callback()
def _root() -> None:
    """FleetSieve: profile only what changes the fleet decision."""

#: Feature modules that add commands; each exposes ``register(app: typer.Typer) -> None``.
COMMAND_MODULES: tuple[str, ...] = ("fleetsieve.campaign_cli", "fleetsieve.evaluate.cli",
                                     "fleetsieve.backends.openai.cli", "fleetsieve.importers.cli",
                                     "fleetsieve.serve_sim.cli", "fleetsieve.sim.cli")


def fail(err: InputError) -> "typer.Exit":
    """Print a one-line input error and return the exit to raise."""
    Console(stderr=True).print(f"[bold red]error:[/] {err}", highlight=False, soft_wrap=True)
    return typer.Exit(code=2)


def allocation_table(spec: FleetSpec, alloc: Allocation, kappa: dict[tuple[str, int], float], title: str) -> Table:
    table = Table(title=title)
    for col in ("workload", "demand req/s", "tp", "replicas", "GPUs", "capacity req/s/replica", "served req/s"):
        table.add_column(col, justify="left" if col == "workload" else "right")
    for w, wl in spec.workloads.items():
        parts = alloc.assignments.get(w, ()) or ()
        served = min(wl.demand_rps, sum(a.replicas * kappa.get((w, a.tp), 0.0) for a in parts))
        for i, a in enumerate(parts or ()):
            table.add_row(w if i == 0 else "", f"{wl.demand_rps:g}" if i == 0 else "", str(a.tp), str(a.replicas),
                          str(a.gpus), f"{kappa.get((w, a.tp), 0.0):g}", f"{served:.3g}" if i == 0 else "")
        if not parts:
            table.add_row(w, f"{wl.demand_rps:g}", "-", "0", "0", "-", "0")
    obj = alloc.objective
    table.caption = (f"min fulfilment {obj.min_fulfilment:.3f} · served {obj.served_rps:.3f} req/s · "
                     f"GPUs {alloc.gpus_used}/{spec.gpu_budget}")
    return table


@app.command()
def plan(
    spec_path: Path = typer.Argument(..., metavar="SPEC", help="fleet spec (TOML)"),
    grid_path: Path = typer.Option(..., "--grid", help="measurement grid (CSV, format v1)"),
    as_json: bool = typer.Option(False, "--json", help="print the decision as JSON"),
    noise_aware: bool = typer.Option(False, "--noise-aware", help="judge cells by the noise-aware rule (confidence "
                                     "statements over the repeats) instead of 'every repeat meets the SLO'"),
) -> None:
    """Print the full-grid (oracle) fleet decision."""
    try:
        spec, grid = load_spec(spec_path), load_grid(grid_path)
        rule = all_repeats_rule
        if noise_aware:
            from fleetsieve.noise import noise_aware_rule_for_repeats  # scipy.special: only when asked for

            rule = noise_aware_rule_for_repeats(grid.max_runs_per_cell)
        alloc, kappa = oracle_allocation(spec, grid, rule), oracle_capacities(spec, grid, rule)
    except InputError as err:
        raise fail(err) from None
    if as_json:
        print(json.dumps(alloc.to_json(spec.mixed)))
    else:
        console.print(allocation_table(spec, alloc, kappa, f"Oracle decision · {spec_path}"))


def _register_feature_commands() -> None:
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(app)


_register_feature_commands()


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except InputError as err:  # raised outside a command's own handling
        Console(stderr=True).print(f"[bold red]error:[/] {err}", highlight=False, soft_wrap=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
