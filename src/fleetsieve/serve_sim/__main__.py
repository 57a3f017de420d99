"""``python -m fleetsieve.serve_sim ...``: serve-sim without the rest of the CLI (used by launchers)."""

import sys

import typer

from fleetsieve.errors import InputError
from fleetsieve.serve_sim.cli import register

app = typer.Typer(add_completion=False)
register(app)

if __name__ == "__main__":
    try:
        app()
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
