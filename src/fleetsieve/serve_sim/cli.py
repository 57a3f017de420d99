"""``fleetsieve serve-sim``: run the simulated engine server.

Imports of aiohttp and the simulator happen inside the command, so ``fleetsieve --help``
does not pay for them.
"""

from __future__ import annotations

import functools
from typing import Optional

import typer

from fleetsieve.errors import InputError

DEFAULT_HOST = "127.0.0.1"  # loopback only unless the user asks for more (same as server.DEFAULT_HOST)


def _check(engine: str, time_scale: float, tp: int, workers: int) -> None:
    if engine not in ("sim", "fixed"):
        raise InputError("--engine", f"unknown engine {engine!r}; available: fixed, sim")
    if time_scale < 0 or tp < 1:
        raise InputError("--time-scale/--tp", "time scale must be >= 0 and tp >= 1")
    if workers < 1:
        raise InputError("--workers", "must be >= 1")
    if workers > 1 and engine != "fixed":
        raise InputError("--workers", "several workers need --engine fixed: each worker runs its own engine, "
                                      "which would split one simulated replica's batch")


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
    workers: int = typer.Option(1, help="server processes sharing the port (SO_REUSEPORT); needs --engine fixed"),
) -> None:
    """Serve an OpenAI-compatible streaming API whose timing comes from the simulator.

    --engine fixed --time-scale 0 is fast mode: each response is written at once (for
    benchmarking clients)."""
    _check(engine, time_scale, tp, workers)
    make_app = functools.partial(_app, engine, model, gpu, tp, precision, step_ms, served_name or model, time_scale)
    try:
        first = make_app()
    except ImportError as err:
        raise InputError("--engine sim", f"the simulator is not available ({err}); use --engine fixed") from None
    _serve(first, make_app, host, port, workers)


def _app(engine: str, model: str, gpu: str, tp: int, precision: str, step_ms: float, served: str,
         time_scale: float):
    from fleetsieve.serve_sim.app import create_app
    from fleetsieve.serve_sim.engines import make_token_source

    source = make_token_source(engine, model=model, gpu=gpu, tp=tp, precision=precision, step_ms=step_ms)
    return create_app(source, model=served, time_scale=time_scale)


def _serve(first, make_app, host: str, port: int, workers: int) -> None:
    """Serve ``first`` (one process) or ``workers`` processes each with ``make_app()``."""
    import asyncio

    from fleetsieve.serve_sim.server import serve_until_signalled, serve_workers

    try:
        if workers == 1:
            asyncio.run(serve_until_signalled(first, host, port))
            return
        code = serve_workers(make_app, host, port, workers)
    except OSError as err:
        raise InputError("--host/--port", f"cannot listen on {host}:{port}: {err}") from None
    if code:
        raise typer.Exit(code=code)


def register(app: typer.Typer) -> None:
    """Add the ``serve-sim`` command to the FleetSieve CLI."""
    app.command("serve-sim")(serve_sim)
