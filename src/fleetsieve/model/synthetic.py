"""SYNTHETIC monotone grids (not measurements) for testing and tuning the model and strategies.

Each world has per-(workload, tp) saturation rates ``mu = s_w * tp**e * jitter`` and tail
latencies that blow up as ``1 / (1 - rho)**c`` with ``rho = load / mu``; beyond saturation the
throughput stalls at ``mu``. Repeats add multiplicative log-normal noise. Only the shape is
realistic; the numbers are drawn from a seeded generator.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from fleetsieve.metrics import GRID_METRIC_COLUMNS
from fleetsieve.records import Cell, Measurement

WORKLOADS = ("chat", "code", "summarize")
TPS = (1, 2, 4, 8)
E2EL_SLO_MS = 30000.0
TTFT_SLO_MS = 5000.0


@dataclass(frozen=True)
class World:
    """A synthetic spec (as a mapping for ``parse_spec``) and its full grid of runs."""

    spec: dict[str, Any]
    runs: tuple[Measurement, ...]
    saturation_rps: dict[tuple[str, int], float]


def _latencies(base_e2el: float, base_ttft: float, rho: float, c: float) -> tuple[float, float]:
    """p99 e2el and ttft (ms) at utilisation ``rho``; past saturation they grow with the backlog."""
    blowup = (1.0 - min(rho, 0.995)) ** (-c)
    if rho >= 1.0:
        blowup *= 1.0 + 20.0 * (rho - 0.995)
    return base_e2el * blowup, base_ttft * blowup ** 1.6


def _run(cell: Cell, mu: float, bases: tuple[float, float], c: float, noise: float, repeat: int, duration_s: float) -> Measurement:
    e2el, ttft = _latencies(*bases, cell.load_rps / mu, c)
    e2el, ttft = e2el * math.exp(noise), ttft * math.exp(1.3 * noise)
    metrics = {k: 0.0 for k in GRID_METRIC_COLUMNS}
    metrics.update({
        "request_throughput": min(cell.load_rps, mu), "p99_e2el_ms": e2el, "p90_e2el_ms": e2el / 1.6,
        "p50_e2el_ms": e2el / 3.0, "mean_e2el_ms": e2el / 2.6, "p99_ttft_ms": ttft, "p90_ttft_ms": ttft / 2.0,
        "p50_ttft_ms": ttft / 5.0, "mean_ttft_ms": ttft / 4.0, "mean_tpot_ms": 30.0, "p50_tpot_ms": 29.0,
        "p90_tpot_ms": 35.0, "p99_tpot_ms": 45.0, "mean_itl_ms": 30.0, "p99_itl_ms": 60.0,
    })
    n = max(1, int(cell.load_rps * duration_s))
    return Measurement(cell, metrics=metrics, gpu_seconds=cell.tp * duration_s, duration_s=duration_s,
                       repeat=repeat, num_requests=n, completed=n, extra={"source": "synthetic"})


def make_world(seed: int, *, repeats: int = 1, noise_sd: float = 0.0, levels_per_config: int = 12,
               budget: int = 32, duration_s: float = 300.0, workloads: tuple[str, ...] = WORKLOADS) -> World:
    """A random synthetic world; the budget covers roughly 60-90% of the demand."""
    rng = np.random.default_rng(seed)
    exponent = rng.uniform(0.7, 0.95)
    scale = {w: rng.uniform(0.6, 1.6) for w in workloads}
    mu = {(w, tp): scale[w] * tp ** exponent * rng.uniform(0.85, 1.15) for w in workloads for tp in TPS}
    top = {w: max(mu[(w, tp)] for tp in TPS) for w in workloads}
    base = {w: (rng.uniform(0.25, 0.6) * E2EL_SLO_MS, rng.uniform(0.05, 0.3) * TTFT_SLO_MS, rng.uniform(0.4, 1.0)) for w in workloads}
    runs = []
    for (w, tp), m in mu.items():
        step = 1.25 * scale[w] * tp ** 0.85 / levels_per_config
        jitter = rng.uniform(0.85, 1.15, size=3)
        bases = (base[w][0] * jitter[0] * 8 / (7 + tp), base[w][1] * jitter[1])
        c = base[w][2] * jitter[2]
        for k in range(1, levels_per_config + 1):
            cell = Cell(w, tp, round(step * k, 4))
            runs += [_run(cell, m, bases, c, rng.normal(0, noise_sd), r, duration_s) for r in range(repeats)]
    spec = {"gpu_budget": budget, "tp_degrees": list(TPS),
            "workloads": {w: {"demand_rps": round(float(top[w] * rng.uniform(1.5, 3.0)), 3),
                              "slo": {"p99_e2el_ms": E2EL_SLO_MS, "p99_ttft_ms": TTFT_SLO_MS}} for w in workloads}}
    return World(spec, tuple(runs), mu)


def small_world(seed: int = 0, repeats: int = 1, noise_sd: float = 0.0):
    """A small world ready for replay (2 workloads x 4 TP x 6 levels, 12 GPUs): spec, grid, cell space."""
    from fleetsieve.grid import Grid
    from fleetsieve.plan import space_from_grid
    from fleetsieve.spec import parse_spec

    world = make_world(seed, levels_per_config=6, workloads=("chat", "code"), budget=12, repeats=repeats, noise_sd=noise_sd)
    spec, grid = parse_spec(world.spec), Grid(world.runs)
    return spec, grid, space_from_grid(spec, grid)
