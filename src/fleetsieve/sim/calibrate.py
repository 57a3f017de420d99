"""Fit the step-time parameters on real closed-loop measurements, and report errors.

A closed-loop run's schedule (which requests share which step) does not depend on how long the
steps take: arrivals follow completions, and completions are counted in steps. So each point is
simulated once, recording its per-step batch features; any parameter vector then re-times the
steps with one vectorised call, and TTFT/TPOT follow from cumulative step ends. That makes a
scipy least-squares fit over dozens of points take seconds.

Fit set (declared): Qwen/Qwen3-32B, vLLM, h100_sxm, bf16, TP 2/4/8, OSL 128 and 1024.
Held out: the same at OSL 512. Other models/GPUs are only ever evaluated, never fitted.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

import numpy as np
from scipy.optimize import least_squares

from fleetsieve.sim.catalog import PRECISIONS, load_catalog
from fleetsieve.sim.engine import STEP_FEATURES
from fleetsieve.sim.factory import make_engine, make_parts
from fleetsieve.sim.run import run_closed_loop
from fleetsieve.sim.steptime import StepTimeModel, StepTimeParams

CALIBRATION_CSV = Path(__file__).resolve().parent.parent / "data" / "calibration" / "aiconfigurator_silicon_h100_h200.csv"
FIT_MODEL, FIT_BACKEND, FIT_SYSTEM, FIT_TPS, FIT_OSLS = "Qwen/Qwen3-32B", "vllm", "h100_sxm", (2, 4, 8), (128, 1024)
HELD_OUT_OSLS = (512,)
_SYSTEM_TO_GPU = {"h100_sxm": "h100-sxm", "h200_sxm": "h200-sxm"}


@dataclass(frozen=True)
class Point:
    """One real closed-loop measurement (mean TTFT/TPOT in ms)."""

    backend: str
    model: str
    system: str
    precision: str
    tp: int
    isl: int
    osl: int
    concurrency: int
    ttft_ms: float
    tpot_ms: float

    @property
    def gpu(self) -> str:
        return _SYSTEM_TO_GPU[self.system]


def load_points(path: Path = CALIBRATION_CSV) -> list[Point]:
    """Rows of an aiconfigurator ``silicon_sample``-format CSV (blank precision means bf16)."""
    with Path(path).open() as fh:
        return [Point(row["backend"], row["model_path"], row["system"], row["precision"] or "bf16",
                      int(row["tp_size"]), int(row["isl"]), int(row["osl"]), int(row["batch_size"]),
                      float(row["silicon_ttft_ms"]), float(row["silicon_tpot_ms"]))
                for row in csv.DictReader(fh) if int(row["pp_size"]) == 1]


def is_fit_point(p: Point) -> bool:
    return (p.model, p.backend, p.system, p.precision) == (FIT_MODEL, FIT_BACKEND, FIT_SYSTEM, "bf16") \
        and p.tp in FIT_TPS and p.osl in FIT_OSLS


def is_held_out_point(p: Point) -> bool:
    return (p.model, p.backend, p.system, p.precision) == (FIT_MODEL, FIT_BACKEND, FIT_SYSTEM, "bf16") \
        and p.tp in FIT_TPS and p.osl in HELD_OUT_OSLS


@dataclass(frozen=True)
class Schedule:
    """A closed-loop run's step features and per-request step indices, independent of timing."""

    point: Point
    steps: StepTimeModel
    features: dict[str, np.ndarray]
    arrival_step: np.ndarray
    first_step: np.ndarray
    finish_step: np.ndarray
    target: np.ndarray

    def metrics_ms(self, params: StepTimeParams) -> tuple[float, float]:
        """Mean TTFT and mean TPOT (ms) when the steps are timed with ``params``."""
        model = StepTimeModel(self.steps.arch, self.steps.gpu, self.steps.tp, self.steps.precision, params,
                              self.steps.kv_precision)
        ends = np.cumsum(model.step_s(*(self.features[k] for k in STEP_FEATURES)))
        starts = np.concatenate([[0.0], ends])
        arrival = starts[self.arrival_step]
        ttft = ends[self.first_step] - arrival + model.frontend_latency_s(self.point.isl)
        multi = self.target > 1
        tpot = (ends[self.finish_step[multi]] - ends[self.first_step[multi]]) / (self.target[multi] - 1)
        return float(ttft.mean() * 1e3), float(tpot.mean() * 1e3)


def schedule_for(p: Point, catalog: str | None = None, waves: int = 8, kv_precision: str | None = None) -> Schedule:
    """Simulate ``p`` once (any parameters give the same schedule) and keep what re-timing needs.

    ``kv_precision`` overrides the KV-cache element type (None: the row's precision).
    """
    engine = make_engine(model=p.model, gpu=p.gpu, tp=p.tp, precision=p.precision, catalog=catalog, record_steps=True,
                         record_itl=False, kv_precision=kv_precision)
    run_closed_loop(engine, concurrency=p.concurrency, isl=p.isl, osl=p.osl, waves=waves)
    r, n = engine.requests, engine.requests.size
    return Schedule(p, engine.step_model, engine.step_features(), r.arrival_step[:n].copy(),
                    r.first_step[:n].copy(), r.finish_step[:n].copy(), r.target[:n].copy())


def evaluate_point(p: Point, params: StepTimeParams | None = None, catalog: str | None = None,
                   kv_precision: str | None = None) -> tuple[float, float]:
    """Mean TTFT and TPOT (ms) of a direct closed-loop run (no step recording: fast)."""
    engine = make_engine(model=p.model, gpu=p.gpu, tp=p.tp, precision=p.precision, catalog=catalog, params=params,
                         kv_precision=kv_precision)
    metrics = run_closed_loop(engine, concurrency=p.concurrency, isl=p.isl, osl=p.osl).metrics
    return metrics["mean_ttft_ms"], metrics["mean_tpot_ms"]


def simulatable(p: Point, catalog: str | None = None, kv_precision: str | None = None) -> bool:
    """Dense models in the catalog, on a GPU we know, that fit in memory."""
    try:
        return make_parts(model=p.model, gpu=p.gpu, tp=p.tp, precision=p.precision, catalog=catalog,
                          kv_precision=kv_precision)[1].fits
    except (KeyError, ValueError):
        return False


def _residuals(schedules: list[Schedule], params: StepTimeParams) -> np.ndarray:
    out = []
    for s in schedules:
        ttft, tpot = s.metrics_ms(params)
        out += [np.log(ttft / s.point.ttft_ms), np.log(tpot / s.point.tpot_ms)]
    return np.array(out)


def fit_params(schedules: list[Schedule], start: StepTimeParams | None = None) -> StepTimeParams:
    """Least squares on log errors of TTFT and TPOT; parameters searched in log space within bounds."""
    start = start or StepTimeParams()
    # Efficiency ceilings from Vidur's H100 per-op timings (GEMMs reach ~0.74 of peak FLOP/s and
    # ~0.85 of HBM bandwidth), so the fit cannot buy accuracy with impossible hardware.
    lower = np.log([0.3, 0.5, 0.1, 1e-7, 1e-5, 1e-7, 1e-4, 1e-8])
    upper = np.log([0.8, 0.92, 0.8, 1e-3, 0.05, 1e-3, 0.5, 1e-3])
    x0 = np.clip(np.log(start.to_vector()), lower + 1e-9, upper - 1e-9)
    fun: Callable[[np.ndarray], np.ndarray] = lambda x: _residuals(schedules, StepTimeParams.from_vector(np.exp(x)))
    result = least_squares(fun, x0, bounds=(lower, upper), x_scale=1.0, diff_step=1e-3)
    return StepTimeParams.from_vector(np.exp(result.x))


@dataclass(frozen=True)
class ErrorReport:
    """Median and p90 absolute % error of TTFT and TPOT over a set of points."""

    label: str
    points: int
    ttft_median: float
    ttft_p90: float
    tpot_median: float
    tpot_p90: float

    def line(self) -> str:
        return (f"{self.label:<48} n={self.points:<3} TTFT |err| median {self.ttft_median:5.1f}%  p90 {self.ttft_p90:6.1f}%"
                f"   TPOT |err| median {self.tpot_median:5.1f}%  p90 {self.tpot_p90:6.1f}%")


def error_report(label: str, runs: Iterable[Schedule | Point], params: StepTimeParams,
                 kv_precision: str | None = None) -> ErrorReport:
    """Errors over schedules (re-timed) or points (simulated directly with ``params``, and with
    ``kv_precision`` as the KV-cache type when given)."""
    ttft_err, tpot_err = [], []
    for run in runs:
        point = run.point if isinstance(run, Schedule) else run
        ttft, tpot = run.metrics_ms(params) if isinstance(run, Schedule) else evaluate_point(
            run, params, kv_precision=kv_precision)
        ttft_err.append(abs(ttft / point.ttft_ms - 1) * 100)
        tpot_err.append(abs(tpot / point.tpot_ms - 1) * 100)
    if not ttft_err:
        return ErrorReport(label, 0, *([float("nan")] * 4))
    return ErrorReport(label, len(ttft_err), float(np.median(ttft_err)), float(np.percentile(ttft_err, 90)),
                       float(np.median(tpot_err)), float(np.percentile(tpot_err, 90)))


def roofline_floor_ms(p: Point, catalog: str | None = None) -> float:
    """The least possible mean TPOT (ms) of a closed-loop point on its hardware.

    In steady state each decode step of ``c`` clients also carries ``c x isl / osl`` prompt tokens;
    the floor is that step at 100 % of peak FLOP/s or HBM bandwidth (weights plus the KV of
    half-finished requests), whichever binds, with no all-reduce and no overhead. A measurement
    near this floor cannot be matched by any step-time model with realistic efficiencies.
    """
    cat = load_catalog(catalog)
    arch, gpu = cat.model(p.model), cat.gpu(p.gpu)
    tokens = p.concurrency * (1 + p.isl / p.osl)
    flops = 2.0 * arch.layers * arch.layer_params / p.tp * tokens
    weights = arch.layers * arch.layer_params * PRECISIONS[p.precision] / p.tp
    kv = p.concurrency * (p.isl + p.osl / 2) * arch.kv_bytes_per_token(p.precision) / p.tp
    return max(flops / gpu.flops(p.precision), (weights + kv) / gpu.hbm_bytes_per_s) * 1e3
