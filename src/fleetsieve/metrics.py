"""Metric names. Everything that leaves the program uses vLLM's ``--save-result`` keys.

Latencies are in milliseconds (suffix ``_ms``), rates in requests/s or tokens/s.
"""

from __future__ import annotations

LATENCY_KINDS = ("ttft", "tpot", "itl", "e2el")
STATS = ("mean", "median", "p50", "p90", "p99")

#: Columns every grid row carries (besides the identifying ones).
GRID_METRIC_COLUMNS: tuple[str, ...] = (
    "request_throughput",
    "mean_ttft_ms", "p50_ttft_ms", "p90_ttft_ms", "p99_ttft_ms",
    "mean_tpot_ms", "p50_tpot_ms", "p90_tpot_ms", "p99_tpot_ms",
    "mean_itl_ms", "p99_itl_ms",
    "mean_e2el_ms", "p50_e2el_ms", "p90_e2el_ms", "p99_e2el_ms",
)

#: Metric keys an SLO may name: any latency statistic in the vLLM naming scheme.
SLO_METRICS: frozenset[str] = frozenset(
    f"{stat}_{kind}_ms" for kind in LATENCY_KINDS for stat in STATS
)


def is_latency_metric(name: str) -> bool:
    """True for keys like ``p99_e2el_ms``: smaller is better, and an SLO is an upper bound."""
    return name in SLO_METRICS
