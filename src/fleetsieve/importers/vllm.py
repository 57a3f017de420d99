"""Import ``vllm bench serve --save-result`` JSON (also ``benchmarks/benchmark_serving.py``).

Summary keys are used as they are (``mean_ttft_ms``, ``p99_e2el_ms`` ...). vLLM writes
percentiles only for ``--metric-percentiles`` (default 99) and metrics only for
``--percentile-metrics`` (default ttft,tpot,itl). A statistic the summary lacks is computed
from the per-request arrays (``ttfts``, ``itls``, ``output_lens``, ``errors``, seconds) when the
file has them (``--save-detailed`` in recent vLLM); otherwise the import fails naming the key.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from fleetsieve.errors import InputError
from fleetsieve.importers._common import build_measurement, check_consistent, number, offered_rate, require
from fleetsieve.metrics import GRID_METRIC_COLUMNS
from fleetsieve.records import Measurement

HINT = "(rerun with --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,90,99, or --save-detailed)"


def _detailed(data: Mapping[str, Any]) -> dict[str, np.ndarray] | None:
    """Per-request latencies (ms) from the detailed arrays, or None when absent."""
    if not all(k in data for k in ("ttfts", "itls", "output_lens")):
        return None
    errors = data.get("errors") or [""] * len(data["ttfts"])
    ok = [i for i, e in enumerate(errors) if not e and data["output_lens"][i] > 0]
    ttft = np.array([data["ttfts"][i] for i in ok], dtype=float)
    gaps = [np.asarray(data["itls"][i], dtype=float) for i in ok]
    e2el = ttft + np.array([g.sum() for g in gaps])
    out = np.array([data["output_lens"][i] for i in ok], dtype=float)
    multi = out > 1
    tpot = (e2el[multi] - ttft[multi]) / (out[multi] - 1)
    itl = np.concatenate(gaps) if gaps else np.empty(0)
    return {"ttft": ttft * 1e3, "tpot": tpot * 1e3, "itl": itl * 1e3, "e2el": e2el * 1e3}


def _from_detail(key: str, detail: Mapping[str, np.ndarray]) -> float:
    stat, kind, _ = key.split("_")
    values = detail[kind]
    if not values.size:
        return math.nan
    return float(values.mean()) if stat == "mean" else float(np.percentile(values, float(stat[1:])))


def _metric(data: Mapping[str, Any], key: str, detail: Mapping[str, np.ndarray] | None, where: str) -> float:
    if key in data and data[key] is not None:
        return number(data[key], where, key)
    stat, kind, _ = key.split("_")
    if stat == "p50" and data.get(f"median_{kind}_ms") is not None:
        return number(data[f"median_{kind}_ms"], where, f"median_{kind}_ms")
    if detail is not None:
        return _from_detail(key, detail)
    raise InputError(where, f"missing key {key!r} {HINT}")


def parse_vllm(data: Any, where: str, *, workload: str, tp: int) -> list[Measurement]:
    """One measurement from one vLLM result file."""
    rate = offered_rate(require(data, "request_rate", where), where, "request_rate")
    detail = _detailed(data)
    metrics = {"request_throughput": number(require(data, "request_throughput", where), where, "request_throughput")}
    for key in GRID_METRIC_COLUMNS[1:]:
        metrics[key] = _metric(data, key, detail, where)
    check_consistent(rate, metrics["request_throughput"], where, "request_rate")
    completed = int(number(require(data, "completed", where), where, "completed"))
    total = int(number(data.get("num_prompts", completed + int(data.get("failed", 0) or 0)), where, "num_prompts"))
    extra = {"output_throughput": data.get("output_throughput"), "model_id": data.get("model_id")}
    return [build_measurement(workload=workload, tp=tp, rate=rate, metrics=metrics,
                              duration_s=number(require(data, "duration", where), where, "duration"),
                              num_requests=total, completed=completed, where=where, fmt="vllm",
                              extra={k: v for k, v in extra.items() if v is not None})]
