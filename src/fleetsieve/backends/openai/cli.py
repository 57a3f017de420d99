"""``fleetsieve measure``: one live measurement against a running OpenAI-compatible server.

The backend (and with it the HTTP client) is imported inside the command, so registering it
costs ``fleetsieve --help`` nothing.
"""

from __future__ import annotations

import json
import math
from typing import Optional

import typer

from fleetsieve.errors import InputError
from fleetsieve.records import Cell, Measurement


def measurement_json(m: Measurement) -> dict:
    """One flat JSON object: the vLLM metric keys plus status, reason and cost."""
    out = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in m.metrics.items()}
    out.update({"status": m.status.value, "reason": m.reason, "workload": m.cell.workload, "tp": m.cell.tp,
                "request_rate": m.cell.load_rps, "duration": m.duration_s, "gpu_seconds": m.gpu_seconds,
                "completed": m.completed, "num_prompts": m.num_requests, "attempts": m.extra.get("attempts")})
    return out


def measure(
    endpoint: str = typer.Option(..., help="server base URL, e.g. http://127.0.0.1:8000"),
    model: str = typer.Option(..., help="model name the server serves"),
    workload: str = typer.Option("chat", help="workload whose lengths the requests take"),
    rate: float = typer.Option(..., help="offered load, requests/s"),
    duration: float = typer.Option(60.0, help="seconds of arrivals"),
    tp: int = typer.Option(1, help="GPUs per replica (for GPU-seconds accounting)"),
    api: str = typer.Option("completions", help="'completions' (token-id prompts) or 'chat'"),
    arrival: str = typer.Option("poisson", help="poisson | gamma | trace"),
    cv: Optional[float] = typer.Option(None, help="gap CV for gamma arrivals"),
    warmup: float = typer.Option(5.0, help="seconds excluded at the start"),
    cooldown: float = typer.Option(5.0, help="seconds excluded at the end"),
    seed: int = typer.Option(0),
    slo_p99_e2el_ms: Optional[float] = typer.Option(None, help="abort early when p99 e2e is above this with confidence"),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object"),
) -> None:
    """Measure one load level over real HTTP and print vLLM-style metrics plus status."""
    from fleetsieve.backends.openai.backend import OpenAIBackend

    try:
        backend = OpenAIBackend(dict(endpoint=endpoint, model=model, duration_s=duration, api=api, arrival=arrival,
                                     cv=cv, warmup_s=warmup, cooldown_s=cooldown))
        if rate <= 0 or tp < 1:
            raise InputError("--rate/--tp", "rate must be positive and tp >= 1")
        backend.plan(Cell(workload, tp, rate), seed)  # bad workload/arrival -> InputError before any traffic
    except (InputError, ValueError) as err:
        typer.echo(f"error: {err}".splitlines()[0], err=True)
        raise typer.Exit(code=2) from None
    slo = {"p99_e2el_ms": slo_p99_e2el_ms} if slo_p99_e2el_ms else None
    result = measurement_json(backend.measure(Cell(workload, tp, rate), seed=seed, slo=slo))
    if as_json:
        typer.echo(json.dumps(result))
    else:
        for key, value in result.items():
            typer.echo(f"{key:>24}: {value}")


def register(app: typer.Typer) -> None:
    """Add the ``measure`` command to the FleetSieve CLI."""
    app.command("measure")(measure)
