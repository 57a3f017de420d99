"""The campaign commands: ``run``, ``create``, ``ask``, ``tell`` and ``report`` (see ``register(app)``).

``ask`` / ``tell`` let shell scripts drive a campaign stored in SQLite (Optuna's idiom)::

    fleetsieve create fleet.toml --backend-arg model=NAME --storage sqlite:///c.db   # cells: the spec's load_rps
    P=$(fleetsieve ask --storage sqlite:///c.db)           # one JSON proposal, empty when done
    fleetsieve tell --storage sqlite:///c.db p00007 '{"p99_e2el_ms": 812.0, "request_throughput": 2.0, ...}'
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Optional

import typer
from pydantic import ValidationError

from fleetsieve.backends import Backend, make_backend
from fleetsieve.campaign import Campaign
from fleetsieve.backends.replay import ReplayBackend
from fleetsieve.errors import InputError
from fleetsieve.executors import make_executor
from fleetsieve.knowledge import CellSpace
from fleetsieve.plan import space_from_grid
from fleetsieve.records import Measurement, Status
from fleetsieve.spec import FleetSpec, load_spec, spec_to_dict
from fleetsieve.store import CampaignSetup, Proposal, Store, open_store, space_to_dict
from fleetsieve.store.sqlite import path_of
from fleetsieve.strategies import Strategy, make_strategy

#: Grid-row fields that describe the run rather than a metric.
_RUN_FIELDS = {"workload", "tp", "load_rps", "repeat", "duration_s", "gpu_seconds", "num_requests", "completed",
               "status", "reason"}


def parse_pairs(pairs: list[str], where: str) -> dict[str, Any]:
    """``KEY=VALUE`` options as a dict; a VALUE that parses as JSON is taken as such (numbers, lists)."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise InputError(where, f"expected KEY=VALUE, got {pair!r}")
        try:
            out[key] = json.loads(text)
        except json.JSONDecodeError:
            out[key] = text
    return out


def space_for(spec: FleetSpec, backend: Backend, duration_s: float) -> CellSpace:
    """Replay: the grid's cells. Others: the spec's load levels, each costing ``tp * duration_s``."""
    if isinstance(backend, ReplayBackend):
        return space_from_grid(spec, backend.grid)
    levels = {}
    for w, wl in spec.workloads.items():
        for tp in spec.tp_degrees:
            found = wl.levels_for(tp)
            if not found:
                raise InputError(f"workloads.{w}.load_rps", f"no load levels for TP {tp}; the {backend.name} "
                                 "backend measures only the levels the spec lists (e.g. load_rps = [0.5, 1, 2, 4])")
            levels[(w, tp)] = found
    return CellSpace.from_levels(levels, float(getattr(backend.args, "duration_s", None) or duration_s))


def build_setup(spec_path: Path, backend: Backend, strategy: Strategy, strategy_name: str, seed: int,
                duration_s: float, noise_aware: bool = False) -> CampaignSetup:
    """The campaign's setup from the command line (plugins kept as a name and normalised args)."""
    spec = load_spec(spec_path)
    backend.validate(spec)
    space = space_for(spec, backend, duration_s)
    return CampaignSetup(spec_to_dict(spec), space_to_dict(space), strategy_name, strategy.args.model_dump(mode="json"),
                         backend.name, backend.args.model_dump(mode="json"), seed,
                         "noise-aware" if noise_aware else "plain")


def _load_json(text: str) -> dict[str, Any]:
    if text.startswith("@"):
        try:
            text = Path(text[1:]).read_text()
        except OSError as err:
            raise InputError(text[1:], f"cannot read ({err.strerror})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError("measurement", f"not valid JSON ({err.msg} at column {err.colno})") from None
    if not isinstance(data, dict):
        raise InputError("measurement", "expected a JSON object")
    return data


def _number(key: str, value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise InputError("measurement", f"field {key!r}: not a number: {value!r}") from None


def _flat_to_nested(data: dict[str, Any]) -> dict[str, Any]:
    """Flat grid-row fields -> the ``Measurement.to_dict`` shape (every other numeric field is a metric)."""
    metrics = {k: _number(k, v) for k, v in data.items() if k not in _RUN_FIELDS}
    return {**{k: v for k, v in data.items() if k in _RUN_FIELDS}, "metrics": metrics}


def measurement_from_json(proposal: Proposal, text: Optional[str], fields: list[str],
                          slo_metrics: tuple[str, ...] = ()) -> Measurement:
    """The measurement of ``proposal`` from JSON (nested or flat) or ``--field KEY=VALUE`` pairs."""
    if (text is None) == (not fields):
        raise InputError("tell", "give the measurement either as JSON or as --field KEY=VALUE pairs (one of them)")
    data = _load_json(text) if text is not None else parse_pairs(fields, "--field")
    nested = data if isinstance(data.get("metrics"), dict) else _flat_to_nested(data)
    for key, want in proposal.cell.to_dict().items():
        if key in nested and str(nested[key]) != str(want) and _number(key, nested[key]) != float(want):
            raise InputError("measurement", f"field {key!r} is {nested[key]!r}, but proposal {proposal.id} is {proposal.cell}")
    status = str(nested.get("status", "OK"))
    if status not in {s.value for s in Status}:
        raise InputError("measurement", f"unknown status {status!r} (use {', '.join(s.value for s in Status)})")
    missing = [k for k in ("request_throughput", *slo_metrics) if status == "OK" and k not in nested["metrics"]]
    if missing:
        raise InputError("measurement", f"an OK measurement of {proposal.cell.workload!r} needs {', '.join(missing)}")
    try:
        return Measurement.from_dict({**nested, **proposal.cell.to_dict(), "repeat": proposal.repeat})
    except (TypeError, ValueError) as err:
        raise InputError("measurement", str(err)) from None


def _fail(err: InputError) -> typer.Exit:
    from fleetsieve.cli import fail

    return fail(err)


def _strategy(name: str, pairs: list[str]) -> Strategy:
    args = parse_pairs(pairs, "--strategy-arg")
    try:
        return make_strategy(name, args)
    except ValidationError as err:
        raise InputError(f"--strategy {name}", err.errors()[0]["msg"]) from None


def _backend(name: str, grid: Optional[Path], model: Optional[str], gpu: Optional[str], pairs: list[str]) -> Backend:
    args: dict[str, Any] = {"grid": str(grid.resolve())} if grid is not None else {}
    args.update({k: v for k, v in (("model", model), ("gpu", gpu)) if v is not None})
    args.update(parse_pairs(pairs, "--backend-arg"))
    if name == "replay" and "grid" not in args:
        raise InputError("--grid", "the replay backend needs --grid GRID")
    return make_backend(name, args)


def _open_existing(url_or_path: str) -> Store:
    """A store that must already hold a campaign (never creates an empty database)."""
    url = url_or_path if "://" in url_or_path else f"sqlite:///{url_or_path}"
    if url.startswith("sqlite:///") and not path_of(url).exists():
        raise InputError(url_or_path, "no such campaign database")
    return open_store(url)


def _print_result(campaign: Campaign, as_json: bool) -> None:
    status = campaign.status()
    if as_json:
        print(json.dumps(status.to_json()))
        return
    from fleetsieve.cli import allocation_table, console

    kappa = {cfg: b.lo for cfg, b in campaign.knowledge().bounds().items()}
    d = status.decision
    title = (f"Campaign decision · {status.measurements} measurements · {status.gpu_seconds:,.0f} GPU-s · "
             f"{'certified' if d.certified else 'NOT certified'} (gap {d.gap.fulfilment:.3g} / {d.gap.served_rps:.3g} req/s)")
    console.print(allocation_table(campaign.spec, d.conservative, kappa, title))


# Options `run` and `create` share (Typer reads each default as the option's declaration).
GRID_OPTION = typer.Option(None, "--grid", help="grid to replay, or whose cells to use (replay backend)")
MODEL_OPTION = typer.Option(None, "--model", help="model name (sim backend)")
GPU_OPTION = typer.Option(None, "--gpu", help="GPU name (sim backend)")
BACKEND_ARG_OPTION = typer.Option([], "--backend-arg", help="KEY=VALUE passed to the backend (repeatable)")
DURATION_OPTION = typer.Option(300.0, "--duration-s", help="run length per cell, s (sim/openai cost model)")
SEED_OPTION = typer.Option(0, "--seed")
STRATEGY_OPTION = typer.Option("sieve", "--strategy")
STRATEGY_ARG_OPTION = typer.Option([], "--strategy-arg", help="KEY=VALUE for the strategy (repeatable)")
NOISE_AWARE_OPTION = typer.Option(False, "--noise-aware", help="a cell is (in)feasible only with 95% confidence; "
                                  "indeterminate cells get repeats (see docs/evaluation.md)")


def run(
    spec_path: Path = typer.Argument(..., metavar="SPEC", help="fleet spec (TOML)"),
    backend: str = typer.Option(..., "--backend", help="replay | sim | openai"),
    grid: Optional[Path] = GRID_OPTION,
    model: Optional[str] = MODEL_OPTION,
    gpu: Optional[str] = GPU_OPTION,
    backend_arg: list[str] = BACKEND_ARG_OPTION,
    duration_s: float = DURATION_OPTION,
    seed: int = SEED_OPTION,
    strategy: str = STRATEGY_OPTION,
    strategy_arg: list[str] = STRATEGY_ARG_OPTION,
    noise_aware: bool = NOISE_AWARE_OPTION,
    storage: Optional[str] = typer.Option(None, "--storage", help="sqlite:///campaign.db (or memory://)"),
    resume: bool = typer.Option(False, "--resume", help="continue the campaign stored in --storage"),
    parallel: int = typer.Option(1, "--parallel", help="measurements kept in flight"),
    executor: str = typer.Option("local", "--executor", help="local | ray | simulated"),
    executor_arg: list[str] = typer.Option([], "--executor-arg", help="KEY=VALUE for the executor (repeatable)"),
    as_json: bool = typer.Option(False, "--json", help="end with one JSON object"),
    progress: Optional[bool] = typer.Option(None, "--progress/--no-progress", help="live display (default: on a terminal)"),
) -> None:
    """Run a profiling campaign until the decision is certified and confirmed (resumable with --resume)."""
    try:
        if storage is None:
            raise InputError("--storage", "missing (give e.g. sqlite:///campaign.db, or memory:// for a run that is not kept)")
        chosen = _strategy(strategy, strategy_arg)
        measurer = _backend(backend, grid, model, gpu, backend_arg)
        runner = make_executor(executor, parse_pairs(executor_arg, "--executor-arg"))
        setup = build_setup(spec_path, measurer, chosen, strategy, seed, duration_s, noise_aware)
        store = open_store(storage)
    except InputError as err:
        raise _fail(err) from None
    try:
        campaign = Campaign.open(store, setup, chosen, resume=resume)
        _run_with_progress(campaign, measurer, runner, parallel, progress)
        _print_result(campaign, as_json)
    except InputError as err:
        raise _fail(err) from None
    finally:
        store.close()


def _run_with_progress(campaign: Campaign, backend: Backend, executor: Any, parallel: int, progress: Optional[bool]) -> None:
    from fleetsieve.report.live import LiveProgress

    if progress is None:
        progress = sys.stderr.isatty()
    if not progress:
        campaign.run(backend, executor, parallel)
        return
    with LiveProgress() as live:
        campaign.run(backend, executor, parallel, progress=live)


def create(
    spec_path: Path = typer.Argument(..., metavar="SPEC", help="fleet spec (TOML)"),
    backend: str = typer.Option("openai", "--backend", help="replay | sim | openai: defines the cells (openai: the spec's load_rps)"),
    grid: Optional[Path] = GRID_OPTION,
    model: Optional[str] = MODEL_OPTION,
    gpu: Optional[str] = GPU_OPTION,
    backend_arg: list[str] = BACKEND_ARG_OPTION,
    duration_s: float = DURATION_OPTION,
    seed: int = SEED_OPTION,
    strategy: str = STRATEGY_OPTION,
    strategy_arg: list[str] = STRATEGY_ARG_OPTION,
    noise_aware: bool = NOISE_AWARE_OPTION,
    storage: str = typer.Option(..., "--storage", help="sqlite:///campaign.db to create"),
) -> None:
    """Start a campaign without measuring, for `ask` / `tell` from shell scripts; prints its status as JSON."""
    try:
        chosen = _strategy(strategy, strategy_arg)
        setup = build_setup(spec_path, _backend(backend, grid, model, gpu, backend_arg), chosen, strategy, seed,
                            duration_s, noise_aware)
        with open_store(storage) as store:
            campaign = Campaign.open(store, setup, chosen)
            print(json.dumps(campaign.status().to_json()))
    except InputError as err:
        raise _fail(err) from None


def ask(
    storage: str = typer.Option(..., "--storage", help="sqlite:///campaign.db holding the campaign"),
    n: int = typer.Option(1, "-n", help="how many proposals"),
    reissue: bool = typer.Option(False, "--reissue", help="hand out proposals left in flight (after a crash) first"),
) -> None:
    """Print up to N proposals, one JSON object per line (nothing once the campaign is done)."""
    try:
        with _open_existing(storage) as store:
            proposals = Campaign.load(store, reissue_pending=reissue).ask(n)
    except InputError as err:
        raise _fail(err) from None
    for p in proposals:
        print(json.dumps(p.to_dict()))


def tell(
    proposal_id: str = typer.Argument(..., help="the id printed by `fleetsieve ask`"),
    measurement: Optional[str] = typer.Argument(None, help="measurement JSON (or @file): Measurement.to_dict or flat grid-row fields"),
    field: list[str] = typer.Option([], "--field", help="grid-row field KEY=VALUE instead of JSON (repeatable)"),
    storage: str = typer.Option(..., "--storage", help="sqlite:///campaign.db holding the campaign"),
) -> None:
    """Record the measurement of one proposal; prints the campaign's status as JSON."""
    try:
        with _open_existing(storage) as store:
            campaign = Campaign.load(store)
            proposal = store.proposal(proposal_id)
            if proposal is None:
                raise InputError("tell", f"unknown proposal {proposal_id!r}")
            slo = tuple(sorted(campaign.spec.workloads[proposal.cell.workload].slo))
            campaign.tell(proposal, measurement_from_json(proposal, measurement, field, slo))
            print(json.dumps(campaign.status().to_json()))
    except InputError as err:
        raise _fail(err) from None


def report(
    database: str = typer.Argument(..., metavar="DB", help="campaign database (path or sqlite:/// URL)"),
    out: Path = typer.Option(..., "--out", help="folder for report.html and the PNGs"),
) -> None:
    """Write PNG plots and a self-contained HTML report of a stored campaign."""
    from fleetsieve.report import write_report

    try:
        with _open_existing(database) as store:
            files = write_report(Campaign.load(store), out)
    except InputError as err:
        raise _fail(err) from None
    print(files.html)


def register(app: typer.Typer) -> None:
    """Add ``run``, ``create``, ``ask``, ``tell`` and ``report`` to the ``fleetsieve`` app."""
    for command in (run, create, ask, tell, report):
        app.command(name=command.__name__)(command)
