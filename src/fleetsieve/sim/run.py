"""Offline runs on the engine: closed loop (fixed concurrency) and open loop (timed arrivals).

Both drive the same ``Engine`` through ``add_request`` / ``step`` and report vLLM's
``--save-result`` metric keys (latencies in ms, throughputs per second).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from fleetsieve.errors import InputError
from fleetsieve.sim.engine import Engine
from fleetsieve.sim.request_log import RequestTable

LATENCY_STATS = (("mean", None), ("median", 50.0), ("p50", 50.0), ("p90", 90.0), ("p99", 99.0))


@dataclass(frozen=True)
class SimResult:
    """One simulated run. ``metrics`` uses vLLM keys; ``completed`` counts measured requests."""

    metrics: Mapping[str, float]
    num_requests: int
    completed: int
    duration_s: float
    preemptions: int
    unfinished: int = 0
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self, tp: int) -> dict[str, Any]:
        return {**self.metrics, "completed": self.completed, "num_requests": self.num_requests,
                "num_preemptions": self.preemptions, "duration_s": self.duration_s,
                "gpu_seconds": tp * self.duration_s, "unfinished": self.unfinished, **self.extra}


def _stats(kind: str, values_s: np.ndarray) -> dict[str, float]:
    ms = np.asarray(values_s, dtype=float) * 1e3
    out = {}
    for stat, q in LATENCY_STATS:
        if not ms.size:
            out[f"{stat}_{kind}_ms"] = math.nan
        else:
            out[f"{stat}_{kind}_ms"] = float(ms.mean() if q is None else np.percentile(ms, q))
    return out


def latency_metrics(engine: Engine, r: RequestTable, measured: np.ndarray, window_s: float) -> dict[str, float]:
    """vLLM-style metrics over the finished requests in ``measured`` (indices into ``r``, the
    engine's request table, read once by the caller: building it costs a pass over every request)."""
    done = measured[~np.isnan(r.finish[measured])]
    frontend = engine.step_model.frontend_latency_s(r.prompt[done])
    ttft = r.first_token[done] - r.arrival[done] + frontend
    e2el = r.finish[done] - r.arrival[done] + frontend
    multi = done[r.target[done] > 1]
    tpot = (r.finish[multi] - r.first_token[multi]) / (r.target[multi] - 1)
    itl_req, gaps = engine.inter_token_gaps()
    keep = np.zeros(r.size, dtype=bool)
    keep[done] = True
    metrics = {**_stats("ttft", ttft), **_stats("tpot", tpot), **_stats("itl", gaps[keep[itl_req]]),
               **_stats("e2el", e2el)}
    window = max(window_s, 1e-9)
    metrics["request_throughput"] = done.size / window
    metrics["output_throughput"] = float(r.target[done].sum()) / window
    metrics["total_token_throughput"] = float((r.target[done] + r.prompt[done]).sum()) / window
    return metrics


def run_closed_loop(engine: Engine, *, concurrency: int, isl: int, osl: int, waves: int = 8) -> SimResult:
    """``concurrency`` clients each send ``waves`` ``isl``/``osl`` requests back to back (vLLM bench
    ``--max-concurrency`` with ``num_prompts = waves x concurrency``); every request is measured.

    All clients start together at t=0 (the burst a benchmark begins with). The first request of
    client k asks for ``osl x (k+1)/c`` tokens, so clients then drift apart the way real ones do
    (timing jitter); this keeps the schedule independent of step durations, which calibration uses.
    """
    if concurrency < 1 or isl < 1 or osl < 1 or waves < 1:
        raise InputError("closed loop", "concurrency, isl, osl and waves must be >= 1")
    for client in range(concurrency):
        engine.add_request(client, isl, max(1, -(-osl * (client + 1) // concurrency)), 0.0)
    sent, total = concurrency, concurrency * waves
    while engine.has_work:
        for _ in range(engine.advance()):
            if sent < total:
                engine.add_request(sent, isl, osl, engine.now_s)
                sent += 1
    r = engine.requests
    measured = np.arange(total)
    metrics = latency_metrics(engine, r, measured, engine.now_s)
    return SimResult(metrics, measured.size, measured.size, engine.now_s, int(r.preemptions[measured].sum()))


def run_open_loop(engine: Engine, arrival_s: np.ndarray, prompt_tokens: np.ndarray, output_tokens: np.ndarray, *,
                  duration_s: float, warmup_s: float | None = None, max_drain_s: float | None = None) -> SimResult:
    """Requests arrive at ``arrival_s``; metrics cover those arriving after the warm-up.

    The run stops ``max_drain_s`` after the last arrival (default: 2 x duration); requests still
    unfinished then are reported in ``unfinished`` and their latency so far (a lower bound) is
    counted, so an overloaded cell never looks better than it is.
    """
    warmup = 0.1 * duration_s if warmup_s is None else warmup_s
    horizon = duration_s + (2.0 * duration_s if max_drain_s is None else max_drain_s)
    _feed(engine, np.asarray(arrival_s, dtype=float), np.asarray(prompt_tokens), np.asarray(output_tokens), horizon)
    r = engine.requests
    measured = np.flatnonzero(r.arrival[: r.size] >= warmup)
    unfinished = measured[np.isnan(r.finish[measured])]
    end = engine.now_s
    last_finish = np.nanmax(r.finish[measured]) if measured.size and np.isfinite(r.finish[measured]).any() else end
    metrics = latency_metrics(engine, r, measured, max(min(last_finish, end) - warmup, duration_s - warmup))
    if unfinished.size:
        _censor(r, measured, unfinished, end, metrics)
    return SimResult(metrics, int(measured.size), int(measured.size - unfinished.size), float(duration_s),
                     int(r.preemptions[measured].sum()), int(unfinished.size))


def _feed(engine: Engine, arrival: np.ndarray, prompt: np.ndarray, output: np.ndarray, horizon: float) -> None:
    """Drive the engine: add every request whose arrival time has come, then step."""
    nxt, total = 0, arrival.size
    while (nxt < total or engine.has_work) and engine.now_s < horizon:
        if not engine.has_work and nxt < total and arrival[nxt] > engine.now_s:
            engine.now_s = float(arrival[nxt])
        upto = int(np.searchsorted(arrival, engine.now_s, side="right"))
        for k in range(nxt, upto):
            engine.add_request(k, int(prompt[k]), int(output[k]), float(arrival[k]))
        nxt = max(nxt, upto)
        engine.run_until(min(float(arrival[nxt]), horizon) if nxt < total else horizon)


def _censor(r: RequestTable, measured: np.ndarray, unfinished: np.ndarray, end: float, metrics: dict[str, float]) -> None:
    """Recompute e2el/ttft tails with unfinished requests counted at their age (lower bounds)."""
    age = end - r.arrival[unfinished]
    done = measured[~np.isnan(r.finish[measured])]
    e2el = np.concatenate([r.finish[done] - r.arrival[done], age])
    ttft_unf = np.where(np.isnan(r.first_token[unfinished]), age, r.first_token[unfinished] - r.arrival[unfinished])
    ttft = np.concatenate([r.first_token[done] - r.arrival[done], ttft_unf])
    metrics.update(_stats("e2el", e2el))
    metrics.update(_stats("ttft", ttft))
