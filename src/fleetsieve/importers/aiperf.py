"""Import AIPerf's ``profile_export_aiperf.json`` (aggregated statistics of one run).

Each metric is an object with ``unit``, ``avg``, ``p50``, ``p90``, ``p99`` .... Mapping to vLLM
keys: ``time_to_first_token`` -> ttft; ``request_latency`` -> e2el; ``inter_token_latency``
(per request: (latency - TTFT) / (output tokens - 1), vLLM's TPOT) -> tpot, and also -> itl
(an approximation: AIPerf's per-chunk gaps are not aggregated in this file);
``request_throughput.avg`` -> request_throughput; ``benchmark_duration.avg`` (s) -> duration.
The offered rate is ``input_config.loadgen.request_rate``; concurrency-only runs have none.
"""

from __future__ import annotations

from typing import Any, Mapping

from fleetsieve.errors import InputError
from fleetsieve.importers._common import build_measurement, check_consistent, number, offered_rate, require
from fleetsieve.records import Measurement

#: Latency units AIPerf may report -> factor to milliseconds.
TO_MS = {"ms": 1.0, "s": 1e3, "sec": 1e3, "us": 1e-3, "ns": 1e-6}


def _stat(metrics: Mapping[str, Any], name: str, stat: str, where: str) -> float:
    entry = require(metrics, name, where)
    unit = str(entry.get("unit", "ms")) if isinstance(entry, Mapping) else "ms"
    if unit not in TO_MS:
        raise InputError(where, f"key {name + '.unit'!r}: unknown latency unit {unit!r}")
    return number(require(entry, stat, where, name + "."), where, f"{name}.{stat}") * TO_MS[unit]


def _latencies(metrics: Mapping[str, Any], where: str) -> dict[str, float]:
    out: dict[str, float] = {}
    sources = (("ttft", "time_to_first_token"), ("e2el", "request_latency"), ("tpot", "inter_token_latency"))
    for kind, name in sources:
        for stat in ("avg", "p50", "p90", "p99"):
            out[f"{'mean' if stat == 'avg' else stat}_{kind}_ms"] = _stat(metrics, name, stat, where)
    out["mean_itl_ms"], out["p99_itl_ms"] = out["mean_tpot_ms"], out["p99_tpot_ms"]
    return out


def _rate(data: Mapping[str, Any], where: str) -> float:
    loadgen = require(require(data, "input_config", where), "loadgen", where, "input_config.")
    key = "input_config.loadgen.request_rate"
    return offered_rate(require(loadgen, "request_rate", where, "input_config.loadgen."), where, key)


def parse_aiperf(data: Any, where: str, *, workload: str, tp: int) -> list[Measurement]:
    """One measurement from one AIPerf aggregated export."""
    metrics = data.get("records", data) if isinstance(data, Mapping) else data
    rate = _rate(data, where)
    values = {"request_throughput": number(require(require(metrics, "request_throughput", where), "avg", where,
                                                   "request_throughput."), where, "request_throughput.avg")}
    values.update(_latencies(metrics, where))
    check_consistent(rate, values["request_throughput"], where, "input_config.loadgen.request_rate")
    done = int(number(require(require(metrics, "request_count", where), "avg", where, "request_count."),
                      where, "request_count.avg"))
    errors = metrics.get("error_request_count")
    failed = int(errors.get("avg", 0)) if isinstance(errors, Mapping) else 0
    duration = number(require(require(metrics, "benchmark_duration", where), "avg", where, "benchmark_duration."),
                      where, "benchmark_duration.avg")
    return [build_measurement(workload=workload, tp=tp, rate=rate, metrics=values, duration_s=duration,
                              num_requests=done + failed, completed=done, where=where, fmt="aiperf")]
