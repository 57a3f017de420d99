"""Shared pieces of the importers: strict key access, the rate check, the Measurement built.

Every importer turns one run of another tool into one ``Measurement`` whose metrics are the
grid's columns (vLLM keys, ms). A key that is missing, or a rate that does not hold together,
raises ``InputError`` naming the file and the key, before anything is written.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from fleetsieve.errors import InputError
from fleetsieve.metrics import GRID_METRIC_COLUMNS
from fleetsieve.records import Cell, Measurement, Status

#: Achieved throughput may exceed the offered rate by this factor (Poisson runs of a few hundred
#: requests end a little early or late); beyond it, the file's rate cannot be the offered load.
RATE_TOLERANCE = 1.5


def require(data: Any, key: str, where: str, path: str = "") -> Any:
    """``data[key]``, or InputError naming the file and the full key path."""
    if not isinstance(data, Mapping) or key not in data or data[key] is None:
        raise InputError(where, f"missing key {path + key!r}")
    return data[key]


def number(value: Any, where: str, key: str) -> float:
    """A finite float, or InputError naming the key."""
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise InputError(where, f"key {key!r}: not a number: {value!r}") from None
    if not math.isfinite(out):
        raise InputError(where, f"key {key!r}: {value!r} is not a finite number")
    return out


def offered_rate(value: Any, where: str, key: str) -> float:
    """The offered request rate of a run; closed-loop or infinite-rate runs have none."""
    if isinstance(value, str) and value.strip().lower() in ("inf", "infinity"):
        raise InputError(where, f"key {key!r} is 'inf': a burst/closed-loop run has no offered rate per replica")
    rate = number(value, where, key)
    if rate <= 0:
        raise InputError(where, f"key {key!r}: the offered rate must be positive, got {rate:g}")
    return rate


def check_consistent(rate: float, throughput: float, where: str, rate_key: str) -> None:
    """Refuse a file whose achieved throughput is impossible at its stated offered rate."""
    if throughput > RATE_TOLERANCE * rate:
        raise InputError(where, f"inconsistent rate: key {rate_key!r} says {rate:g} req/s offered, but "
                                f"{throughput:g} req/s completed (more than {RATE_TOLERANCE:g}x the offered rate)")


def check_metrics(metrics: Mapping[str, float], where: str) -> None:
    missing = [c for c in GRID_METRIC_COLUMNS if not math.isfinite(metrics.get(c, math.nan))]
    if missing:
        raise InputError(where, f"missing key(s) for {', '.join(missing)}")


def build_measurement(*, workload: str, tp: int, rate: float, metrics: Mapping[str, float], duration_s: float,
                      num_requests: int, completed: int, where: str, fmt: str,
                      extra: Mapping[str, Any] | None = None) -> Measurement:
    """An OK measurement of ``tp`` GPUs at ``rate`` req/s, costing ``tp x duration_s``."""
    check_metrics(metrics, where)
    if duration_s <= 0:
        raise InputError(where, f"benchmark duration must be positive, got {duration_s:g}")
    if completed > num_requests:
        raise InputError(where, f"inconsistent counts: {completed} completed of {num_requests} requests")
    return Measurement(Cell(workload, tp, rate), Status.OK, dict(metrics), gpu_seconds=tp * duration_s,
                       duration_s=duration_s, num_requests=num_requests, completed=completed,
                       extra={"source": where, "source_format": fmt, **(extra or {})})
