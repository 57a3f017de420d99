"""The ``sim`` backend: measures a cell by running the calibrated serving simulator open loop.

Deterministic for a given (cell, seed, repeat). ``gpu_seconds`` is ``tp x duration_s`` (what
the same run would cost on real GPUs), 0 for a TP at which the model does not fit.
"""

from __future__ import annotations

import math
from typing import Literal, Mapping

import numpy as np
from pydantic import Field

from fleetsieve.backends.base import Backend, BackendArgs
from fleetsieve.errors import InputError
from fleetsieve.metrics import GRID_METRIC_COLUMNS
from fleetsieve.records import Cell, Measurement, Status
from fleetsieve.spec import FleetSpec


class SimulatedArgs(BackendArgs):
    model: str = "Qwen/Qwen3-32B"
    gpu: str = "h100-sxm"
    precision: Literal["bf16", "fp8"] = "bf16"
    duration_s: float = Field(default=300.0, gt=0, description="simulated seconds of arrivals per run")
    arrival: Literal["poisson", "gamma", "trace"] = "poisson"
    cv: float | None = Field(default=None, gt=0, description="inter-arrival CV for gamma arrivals")
    catalog: str | None = Field(default=None, description="user catalog TOML (models/hardware)")


def run_seed(cell: Cell, seed: int, repeat: int) -> int:
    """A stable seed per (cell, seed, repeat): the same across processes and Python versions."""
    words = np.frombuffer(f"{cell.workload}|{cell.tp}|{cell.load_rps!r}".encode(), dtype=np.uint8)
    return int(np.random.SeedSequence([seed, repeat, *words.tolist()]).generate_state(1)[0])


def infeasible_measurement(cell: Cell, repeat: int, duration_s: float) -> Measurement:
    return Measurement(cell=cell, status=Status.ABORTED_INFEASIBLE, metrics={k: math.nan for k in GRID_METRIC_COLUMNS},
                       gpu_seconds=0.0, duration_s=0.0, repeat=repeat, reason="model does not fit",
                       extra={"reason": "model does not fit"})  # the grid writer keeps extras as columns


def simulate_cell(args: SimulatedArgs, cell: Cell, seed: int, repeat: int) -> Measurement:
    """One open-loop run of ``cell``; the model-does-not-fit case is a row, not an error."""
    from fleetsieve.sim.factory import make_engine, model_fits
    from fleetsieve.sim.run import run_open_loop
    from fleetsieve.sim.workloads import get_workload

    common = dict(model=args.model, gpu=args.gpu, tp=cell.tp, precision=args.precision, catalog=args.catalog)
    if not model_fits(**common):
        return infeasible_measurement(cell, repeat, args.duration_s)
    stream = get_workload(cell.workload).sample(rate_rps=cell.load_rps, duration_s=args.duration_s,
                                                arrival=args.arrival, cv=args.cv, seed=run_seed(cell, seed, repeat))
    engine = make_engine(**common)
    result = run_open_loop(engine, stream.arrival_s, stream.prompt_tokens, stream.output_tokens, duration_s=args.duration_s)
    status, reason = Status.OK, None
    if result.unfinished:
        status, reason = Status.ABORTED_INFEASIBLE, f"backlog: {result.unfinished} requests unfinished at the drain limit"
    extra = {"num_preemptions": result.preemptions, "output_throughput": result.metrics["output_throughput"],
             "reason": reason or ""}
    return Measurement(cell=cell, status=status, metrics=dict(result.metrics), gpu_seconds=cell.tp * args.duration_s,
                       duration_s=args.duration_s, repeat=repeat, num_requests=result.num_requests,
                       completed=result.completed, reason=reason, extra=extra)


class SimulatedBackend(Backend):
    """Open-loop simulation of one replica per cell."""

    name = "sim"
    Args = SimulatedArgs

    def validate(self, spec: FleetSpec) -> None:
        from fleetsieve.sim.factory import make_parts
        from fleetsieve.sim.workloads import get_workload

        for workload in spec.workloads:
            get_workload(workload)
        make_parts(model=self.args.model, gpu=self.args.gpu, tp=1, precision=self.args.precision, catalog=self.args.catalog)

    def measure(self, cell: Cell, *, seed: int = 0, repeat: int = 0,
                slo: Mapping[str, float] | None = None) -> Measurement:
        try:
            return simulate_cell(self.args, cell, seed, repeat)
        except InputError as err:
            return Measurement(cell=cell, status=Status.FAILED, repeat=repeat, reason=str(err),
                               metrics={k: math.nan for k in GRID_METRIC_COLUMNS})

    def expected_gpu_seconds(self, cell: Cell) -> float | None:
        return cell.tp * self.args.duration_s
