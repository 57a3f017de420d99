"""CLI: ``fleetsieve simulate`` (closed or open loop) and ``fleetsieve grid build``."""

from __future__ import annotations

import json
import math
from typing import Optional

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from fleetsieve.errors import InputError

MODEL_OPT = typer.Option("Qwen/Qwen3-32B", "--model", help="model name from the catalog")
GPU_OPT = typer.Option("h100-sxm", "--gpu", help="h100-sxm, h200-sxm, a100-sxm, or one from --catalog")
CATALOG_OPT = typer.Option(None, "--catalog", help="TOML with extra \\[models.X] / \\[hardware.X] entries")  # "\\[" keeps Rich from reading it as markup


def _print_error(err: InputError) -> typer.Exit:
    typer.echo(f"error: {err}", err=True)
    return typer.Exit(code=2)


def _json_safe(data: dict) -> dict:
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in data.items()}


def simulate(
    model: str = MODEL_OPT, gpu: str = GPU_OPT, tp: int = typer.Option(1, "--tp"),
    precision: str = typer.Option("bf16", "--precision"),
    kv_precision: Optional[str] = typer.Option(None, "--kv-precision",
                                               help="KV-cache element type (vLLM --kv-cache-dtype); default: --precision"),
    concurrency: Optional[int] = typer.Option(None, "--concurrency", help="closed loop: concurrent clients"),
    isl: int = typer.Option(1024, "--isl", help="closed loop: prompt tokens"),
    osl: int = typer.Option(512, "--osl", help="closed loop: output tokens"),
    workload: Optional[str] = typer.Option(None, "--workload", help="open loop: chat, code, summarize ..."),
    rate: Optional[float] = typer.Option(None, "--rate", help="open loop: mean requests/s"),
    duration: float = typer.Option(300.0, "--duration", help="open loop: seconds of arrivals"),
    arrival: str = typer.Option("poisson", "--arrival", help="poisson, gamma or trace"),
    cv: Optional[float] = typer.Option(None, "--cv", help="gamma arrivals: inter-arrival CV"),
    seed: int = typer.Option(0, "--seed"),
    catalog: Optional[str] = CATALOG_OPT,
    as_json: bool = typer.Option(False, "--json", help="print one JSON object"),
) -> None:
    """Simulate one replica: closed loop (--concurrency) or open loop (--workload and --rate)."""
    try:
        result = _simulate(model, gpu, tp, precision, concurrency, isl, osl, workload, rate, duration, arrival, cv,
                           seed, catalog, kv_precision)
    except InputError as err:
        raise _print_error(err) from None
    if workload is not None and result["num_requests"] == 0:  # bursty traces can leave a short window empty
        typer.echo("warning: no request arrived after the warm-up (first 10 % of --duration); metrics are empty. "
                   "Use a longer --duration (trace-timed arrivals are bursty).", err=True)
    if as_json:
        typer.echo(json.dumps(_json_safe(result), sort_keys=True))
        return
    for key in sorted(result):
        typer.echo(f"{key:>24}: {result[key]}")


def _simulate(model, gpu, tp, precision, concurrency, isl, osl, workload, rate, duration, arrival, cv, seed,
              catalog, kv_precision=None) -> dict:
    from fleetsieve.sim.factory import make_engine
    from fleetsieve.sim.run import run_closed_loop, run_open_loop

    if (concurrency is None) == (workload is None):
        raise InputError("simulate", "give either --concurrency (closed loop) or --workload with --rate (open loop)")
    if rate is not None and not rate > 0:
        raise InputError("--rate", f"must be a positive number of requests/s, got {rate}")
    engine = make_engine(model=model, gpu=gpu, tp=tp, precision=precision, catalog=catalog, kv_precision=kv_precision)
    if concurrency is not None:
        result = run_closed_loop(engine, concurrency=concurrency, isl=isl, osl=osl)
    else:
        if rate is None:
            raise InputError("--rate", "open loop needs --rate (requests/s)")
        from fleetsieve.sim.workloads import get_workload

        stream = get_workload(workload).sample(rate_rps=rate, duration_s=duration, arrival=arrival, cv=cv, seed=seed)
        result = run_open_loop(engine, stream.arrival_s, stream.prompt_tokens, stream.output_tokens, duration_s=duration)
    return {"model": model, "gpu": gpu, "tp": tp, "precision": precision, "kv_precision": kv_precision or precision,
            **result.to_json(tp)}


def grid_build(
    spec: str = typer.Argument(..., help="fleet spec TOML whose workloads give load_rps levels"),
    out: str = typer.Option(..., "--out", help="grid CSV to write"),
    model: str = MODEL_OPT, gpu: str = GPU_OPT, precision: str = typer.Option("bf16", "--precision"),
    duration: float = typer.Option(300.0, "--duration", help="simulated seconds of arrivals per run"),
    repeats: int = typer.Option(3, "--repeats"), seed: int = typer.Option(0, "--seed"),
    arrival: str = typer.Option("poisson", "--arrival"), cv: Optional[float] = typer.Option(None, "--cv"),
    workers: Optional[int] = typer.Option(None, "--workers", help="processes (default: all cores)"),
    catalog: Optional[str] = CATALOG_OPT,
) -> None:
    """Simulate every (workload, tp, load level, repeat) of SPEC into a grid CSV."""
    from fleetsieve.backends.simulated import SimulatedArgs
    from fleetsieve.sim.grid_build import build_grid, grid_tasks
    from fleetsieve.spec import load_spec

    try:
        args = _sim_args(model=model, gpu=gpu, precision=precision, duration_s=duration, arrival=arrival, cv=cv,
                         catalog=catalog, cls=SimulatedArgs)
        tasks = grid_tasks(load_spec(spec), args, repeats=repeats, seed=seed)
        with Progress(TextColumn("grid"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()) as bar:
            job = bar.add_task("runs", total=len(tasks))
            results = build_grid(tasks, out, workers=workers, on_done=lambda m: bar.advance(job))
    except InputError as err:
        raise _print_error(err) from None
    ok = sum(m.status.value == "OK" for m in results)
    typer.echo(f"wrote {len(results)} rows ({ok} OK) to {out}")


def _sim_args(*, cls, **values):
    from pydantic import ValidationError

    from fleetsieve.sim.factory import make_parts

    try:
        args = cls(**values)
    except ValidationError as err:
        first = err.errors()[0]
        raise InputError(f"--{first['loc'][0]}", first["msg"]) from None
    make_parts(model=args.model, gpu=args.gpu, tp=1, precision=args.precision, catalog=args.catalog)
    return args


def register(app: typer.Typer) -> None:
    """Add ``simulate`` and the ``grid`` sub-app (``grid build``) to ``app``."""
    app.command("simulate")(simulate)
    grid = typer.Typer(no_args_is_help=True, help="Build measurement grids.")
    grid.command("build")(grid_build)
    app.add_typer(grid, name="grid")
