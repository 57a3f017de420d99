"""Client-side timing of streamed requests, and the vLLM ``--save-result`` metrics they give.

Every time is seconds on the client's monotonic clock, as an offset from the run start.
Definitions follow ``vllm bench serve``:

* TTFT: first content chunk minus send time.
* ITL: gaps between consecutive content chunks (all requests pooled).
* TPOT: ``(e2el - ttft) / (output_tokens - 1)`` per request with more than one output token.
* E2EL: last content chunk minus send time.

Only requests *scheduled* inside the measurement window (after warm-up, before cool-down)
count. Throughput is their completions (and output tokens) divided by the time from the
window start to the last of those completions, or by the window length if that is longer;
an overloaded server's slow drain therefore lowers throughput instead of hiding it. This is
the offline simulator's definition (``fleetsieve.sim.run``), so live and simulated agree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

PERCENTILES = (50, 90, 99)
LATENCY_KINDS = ("ttft", "tpot", "itl", "e2el")


@dataclass(frozen=True)
class RequestRecord:
    """What the client saw of one request. ``error`` is None when it completed cleanly."""

    index: int
    scheduled_s: float
    start_s: float
    prompt_tokens: int
    output_tokens: int
    chunk_times_s: tuple[float, ...] = ()
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.chunk_times_s)

    @property
    def ttft_s(self) -> float:
        return self.chunk_times_s[0] - self.start_s if self.chunk_times_s else math.nan

    @property
    def e2el_s(self) -> float:
        return self.chunk_times_s[-1] - self.start_s if self.chunk_times_s else math.nan

    @property
    def end_s(self) -> float:
        return self.chunk_times_s[-1] if self.chunk_times_s else math.nan

    @property
    def tpot_s(self) -> float:
        if self.output_tokens <= 1:
            return math.nan
        return (self.e2el_s - self.ttft_s) / (self.output_tokens - 1)


@dataclass(frozen=True)
class Window:
    """The measurement window ``[start_s, end_s)`` in run-relative seconds."""

    start_s: float
    end_s: float

    @property
    def length_s(self) -> float:
        return self.end_s - self.start_s

    def holds(self, t: float) -> bool:
        return self.start_s <= t < self.end_s


def make_window(duration_s: float, warmup_s: float, cooldown_s: float) -> Window:
    """The window left after dropping warm-up and cool-down; falls back to the whole run."""
    start, end = warmup_s, duration_s - cooldown_s
    if end - start <= 0:
        return Window(0.0, duration_s)
    return Window(start, end)


def _stats(kind: str, values_ms: np.ndarray) -> dict[str, float]:
    if values_ms.size == 0:
        keys = ["mean", "median", "std"] + [f"p{p}" for p in PERCENTILES]
        return {f"{k}_{kind}_ms": math.nan for k in keys}
    out = {
        f"mean_{kind}_ms": float(values_ms.mean()),
        f"median_{kind}_ms": float(np.median(values_ms)),
        f"std_{kind}_ms": float(values_ms.std()),
    }
    for p, v in zip(PERCENTILES, np.percentile(values_ms, PERCENTILES)):
        out[f"p{p}_{kind}_ms"] = float(v)
    return out


def _latency_arrays(done: Sequence[RequestRecord]) -> dict[str, np.ndarray]:
    itls = [np.diff(r.chunk_times_s) for r in done if len(r.chunk_times_s) > 1]
    tpots = np.array([r.tpot_s for r in done])
    return {
        "ttft": np.array([r.ttft_s for r in done]) * 1e3,
        "tpot": tpots[~np.isnan(tpots)] * 1e3 if tpots.size else tpots,
        "itl": (np.concatenate(itls) if itls else np.empty(0)) * 1e3,
        "e2el": np.array([r.e2el_s for r in done]) * 1e3,
    }


def summarize(records: Sequence[RequestRecord], window: Window) -> dict[str, float]:
    """vLLM ``--save-result`` metrics (ms, req/s, tok/s) over the measurement window."""
    measured = [r for r in records if window.holds(r.scheduled_s)]
    done = [r for r in measured if r.ok]
    metrics: dict[str, float] = {}
    for kind, values in _latency_arrays(done).items():
        metrics.update(_stats(kind, values))
    span = max(window.length_s, max((r.end_s for r in done), default=0.0) - window.start_s)
    out_tokens = sum(r.output_tokens for r in done)
    in_tokens = sum(r.prompt_tokens for r in done)
    metrics["request_throughput"] = len(done) / span
    metrics["output_throughput"] = out_tokens / span
    metrics["total_token_throughput"] = (out_tokens + in_tokens) / span
    metrics["completed"] = float(len(done))
    metrics["failed"] = float(sum(1 for r in measured if not r.ok))
    return metrics
