"""``fleetsieve serve-sim``: run the simulated engine server."""

from __future__ import annotations

import asyncio
from typing import Optional

import typer

from fleetsieve.errors import InputError
from fleetsieve.serve_sim.app import create_app
from fleetsieve.serve_sim.engines import make_token_source
from fleetsieve.serve_sim.server import DEFAULT_HOST, serve_until_signalled


def serve_sim(
    model: str = typer.Option(..., help="model name served (and expected in requests)"),
    gpu: str = typer.Option("h100-sxm", help="GPU type known to the simulator's catalog"),
    tp: int = typer.Option(1, help="tensor-parallel degree"),
    precision: str = typer.Option("bf16", help="weight precision known to the simulator"),
    host: str = typer.Option(DEFAULT_HOST, help="bind address (loopback by default)"),
    port: int = typer.Option(8000, help="TCP port; 0 picks a free one (printed on start)"),
    time_scale: float = typer.Option(1.0, help="wall seconds per simulated second; 0 = as fast as possible"),
    engine: str = typer.Option("sim", help="'sim' (the simulator) or 'fixed' (constant step time, for tests)"),
    step_ms: float = typer.Option(10.0, help="step time of the 'fixed' engine, ms"),
    served_name: Optional[str] = typer.Option(None, help="name to serve instead of --model"),
) -> None:
    """Serve an OpenAI-compatible streaming API whose timing comes from the simulator."""
    if engine not in ("sim", "fixed"):
        raise InputError("--engine", f"unknown engine {engine!r}; available: fixed, sim")
    if time_scale < 0 or tp < 1:
        raise InputError("--time-scale/--tp", "time scale must be >= 0 and tp >= 1")
    try:
        source = make_token_source(engine, model=model, gpu=gpu, tp=tp, precision=precision, step_ms=step_ms)
    except ImportError as err:
        raise InputError("--engine sim", f"the simulator is not available ({err}); use --engine fixed") from None
    app = create_app(source, model=served_name or model, time_scale=time_scale)
    asyncio.run(serve_until_signalled(app, host, port))


def register(app: typer.Typer) -> None:
    """Add the ``serve-sim`` command to the FleetSieve CLI."""
    app.command("serve-sim")(serve_sim)
