"""Import GuideLLM's ``benchmarks.json``: one measurement per benchmark in the file.

Each benchmark's ``metrics`` holds status distributions (``successful`` / ``errored`` / ...)
with ``mean``, ``median`` and ``percentiles`` (``p50`` .. ``p99``). Mapping to vLLM keys:
``time_to_first_token_ms`` -> ttft; ``request_latency`` (seconds) -> e2el;
``inter_token_latency_ms`` (per request: (last - first token) / (output - 1), i.e. vLLM's
TPOT) -> tpot, and also -> itl (GuideLLM has no per-chunk gaps; an approximation);
``requests_per_second.successful.mean`` -> request_throughput. The offered rate is the
strategy's ``rate`` (``args.strategy`` in GuideLLM <= 0.3, ``config.strategy`` later); only
``constant`` and ``poisson`` strategies have one.
"""

from __future__ import annotations

from typing import Any, Mapping

from fleetsieve.errors import InputError
from fleetsieve.importers._common import build_measurement, check_consistent, number, offered_rate, require
from fleetsieve.records import Measurement

RATED_STRATEGIES = ("constant", "poisson")


def _strategy(bench: Mapping[str, Any], where: str, base: str) -> tuple[Mapping[str, Any], str]:
    for holder in ("args", "config"):
        strategy = (bench.get(holder) or {}).get("strategy") if isinstance(bench.get(holder), Mapping) else None
        if isinstance(strategy, Mapping):
            return strategy, f"{base}{holder}.strategy"
    raise InputError(where, f"missing key {base + 'args.strategy'!r}")


def _rate(bench: Mapping[str, Any], where: str, base: str) -> tuple[float, str]:
    strategy, path = _strategy(bench, where, base)
    kind = strategy.get("type_", strategy.get("type"))
    if kind not in RATED_STRATEGIES:
        raise InputError(where, f"key {path + '.type_'!r} is {kind!r}: only constant/poisson runs have an offered rate")
    return offered_rate(require(strategy, "rate", where, path + "."), where, path + ".rate"), path + ".rate"


def _stats(metrics: Mapping[str, Any], name: str, where: str, base: str, scale: float = 1.0) -> dict[str, float]:
    path = f"{base}metrics.{name}."
    dist = require(require(metrics, name, where, base + "metrics."), "successful", where, path)
    pct = require(dist, "percentiles", where, path + "successful.")
    p50 = pct.get("p50", dist.get("median"))
    values = {"mean": dist.get("mean"), "p50": p50, "p90": pct.get("p90"), "p99": pct.get("p99")}
    for stat, value in values.items():
        if value is None:
            raise InputError(where, f"missing key {path + 'successful.' + ('mean' if stat == 'mean' else 'percentiles.' + stat)!r}")
    return {stat: number(v, where, path + stat) * scale for stat, v in values.items()}


def _metrics(bench: Mapping[str, Any], where: str, base: str) -> dict[str, float]:
    m = require(bench, "metrics", where, base)
    ttft = _stats(m, "time_to_first_token_ms", where, base)
    tpot = _stats(m, "inter_token_latency_ms", where, base)
    e2el = _stats(m, "request_latency", where, base, scale=1e3)
    rps = require(require(require(m, "requests_per_second", where, base + "metrics."), "successful", where,
                          base + "metrics.requests_per_second."), "mean", where,
                  base + "metrics.requests_per_second.successful.")
    out = {"request_throughput": number(rps, where, base + "metrics.requests_per_second.successful.mean"),
           "mean_itl_ms": tpot["mean"], "p99_itl_ms": tpot["p99"]}
    for kind, stats in (("ttft", ttft), ("tpot", tpot), ("e2el", e2el)):
        out.update({f"{stat}_{kind}_ms": v for stat, v in stats.items()})
    return out


def _duration(bench: Mapping[str, Any], where: str, base: str) -> float:
    if bench.get("duration") is not None:
        return number(bench["duration"], where, base + "duration")
    for holder in (bench, bench.get("run_stats") or {}):
        if holder.get("start_time") is not None and holder.get("end_time") is not None:
            return number(holder["end_time"], where, base + "end_time") - number(holder["start_time"], where, base + "start_time")
    raise InputError(where, f"missing key {base + 'duration'!r} (or start_time/end_time)")


def _counts(bench: Mapping[str, Any], where: str, base: str) -> tuple[int, int]:
    totals = bench.get("request_totals")
    if isinstance(totals, Mapping) and totals.get("successful") is not None:
        done = int(totals["successful"])
        return int(totals.get("total", done + int(totals.get("errored", 0)) + int(totals.get("incomplete", 0)))), done
    stats = require(bench, "run_stats", where, base)
    done = int(require(stats, "total_successful", where, base + "run_stats."))
    return done + int(stats.get("total_errored", 0)) + int(stats.get("total_incomplete", 0)), done


def _one(bench: Any, where: str, base: str, workload: str, tp: int) -> Measurement:
    if not isinstance(bench, Mapping):
        raise InputError(where, f"key {base[:-1]!r} is not an object")
    rate, rate_key = _rate(bench, where, base)
    metrics = _metrics(bench, where, base)
    check_consistent(rate, metrics["request_throughput"], where, rate_key)
    total, done = _counts(bench, where, base)
    return build_measurement(workload=workload, tp=tp, rate=rate, metrics=metrics, duration_s=_duration(bench, where, base),
                             num_requests=total, completed=done, where=where, fmt="guidellm")


def parse_guidellm(data: Any, where: str, *, workload: str, tp: int) -> list[Measurement]:
    """One measurement per benchmark in a GuideLLM report."""
    benchmarks = require(data, "benchmarks", where)
    if not isinstance(benchmarks, list) or not benchmarks:
        raise InputError(where, "key 'benchmarks' holds no benchmarks")
    return [_one(b, where, f"benchmarks[{i}].", workload, tp) for i, b in enumerate(benchmarks)]
