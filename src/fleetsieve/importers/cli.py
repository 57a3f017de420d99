"""``fleetsieve import``: append results from other tools to a grid."""

from __future__ import annotations

from pathlib import Path
from typing import List

import typer

from fleetsieve.errors import InputError
from fleetsieve.importers._files import FORMATS, import_files


def import_command(
    files: List[Path] = typer.Argument(..., metavar="FILE...", help="result files to import"),
    fmt: str = typer.Option(..., "--format", help=f"one of: {', '.join(sorted(FORMATS))}"),
    workload: str = typer.Option(..., help="workload name the runs measured"),
    tp: int = typer.Option(..., help="tensor-parallel degree of the measured replica"),
    out: Path = typer.Option(..., help="grid CSV to append to (created if missing)"),
) -> None:
    """Append vLLM / GuideLLM / AIPerf results to a grid; nothing is written if any file is bad."""
    try:
        rows = import_files(files, fmt, workload=workload, tp=tp, out=out)
    except InputError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(code=2) from None
    levels = ", ".join(f"{m.cell.load_rps:g}" for m in rows)
    typer.echo(f"imported {len(rows)} run(s) of {workload} at tp={tp} (load levels {levels} req/s) into {out}")


def register(app: typer.Typer) -> None:
    """Add the ``import`` command to the FleetSieve CLI."""
    app.command("import")(import_command)
