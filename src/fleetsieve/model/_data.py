"""Turning measurements into the joint model's observation arrays.

Four kinds of evidence, by what a run can tell:

* ``latency``: an OK run that kept up with its load gives log(metric) for every modelled metric;
* ``keeps_up``: the same run says the saturation rate is at least about the load (censored);
* ``saturated``: an OK run that fell behind reports its throughput, close to the saturation rate;
* ``aborted``: a run aborted as infeasible says some SLO metric was over its bound (censored).

Failed runs carry no evidence and are dropped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from fleetsieve.records import Measurement, Status


@dataclass(frozen=True)
class Index:
    """Positions of workloads, TP degrees and metrics in the parameter arrays."""

    workloads: tuple[str, ...]
    tps: tuple[int, ...]
    metrics: tuple[str, ...]

    def w(self, name: str) -> int:
        return self.workloads.index(name)

    def t(self, tp: int) -> int:
        return self.tps.index(tp)


@dataclass(frozen=True)
class Observations:
    """Observation arrays; each group holds parallel arrays of workload/tp indices and values."""

    lat_w: np.ndarray
    lat_t: np.ndarray
    lat_m: np.ndarray
    lat_load: np.ndarray
    lat_log: np.ndarray
    up_w: np.ndarray
    up_t: np.ndarray
    up_log_load: np.ndarray
    sat_w: np.ndarray
    sat_t: np.ndarray
    sat_log_thr: np.ndarray
    ab_w: np.ndarray
    ab_t: np.ndarray
    ab_load: np.ndarray
    ab_log_slo: np.ndarray  # [n, metrics]; +inf where the workload has no SLO on that metric

    @property
    def n_latency(self) -> int:
        return len(self.lat_log)


def _kept_up(m: Measurement, saturation_tol: float) -> bool:
    return m.metric("request_throughput") >= (1.0 - saturation_tol) * m.cell.load_rps


def _log_slo_row(index: Index, slo: Mapping[str, float]) -> list[float]:
    return [math.log(slo[k]) if k in slo else math.inf for k in index.metrics]


def build_observations(measurements: Sequence[Measurement], index: Index,
                       slo: Mapping[str, Mapping[str, float]], saturation_tol: float) -> Observations:
    lat: list[tuple[int, int, int, float, float]] = []
    up: list[tuple[int, int, float]] = []
    sat: list[tuple[int, int, float]] = []
    ab: list[tuple[int, int, float, list[float]]] = []
    for m in measurements:
        if m.cell.workload not in index.workloads or m.cell.tp not in index.tps or m.status is Status.FAILED:
            continue
        w, t, load = index.w(m.cell.workload), index.t(m.cell.tp), m.cell.load_rps
        if m.status is Status.ABORTED_INFEASIBLE:
            ab.append((w, t, load, _log_slo_row(index, slo.get(m.cell.workload, {}))))
        elif not _kept_up(m, saturation_tol):
            thr = m.metric("request_throughput")
            if thr > 0:
                sat.append((w, t, math.log(thr)))
        else:
            up.append((w, t, math.log((1.0 - saturation_tol) * load)))
            lat += [(w, t, j, load, math.log(v)) for j, key in enumerate(index.metrics)
                    if (v := m.metric(key)) > 0 and math.isfinite(v)]
    return _arrays(lat, up, sat, ab, len(index.metrics))


def _cols(rows: list[tuple], n: int) -> list[np.ndarray]:
    if not rows:
        return [np.zeros(0) for _ in range(n)]
    return [np.asarray(col) for col in zip(*rows)]


def _arrays(lat: list, up: list, sat: list, ab: list, n_metrics: int) -> Observations:
    lw, lt, lm, ll, lv = _cols(lat, 5)
    uw, ut, uv = _cols(up, 3)
    sw, st, sv = _cols(sat, 3)
    aw, at, al, aslo = _cols(ab, 4)
    ab_log_slo = np.asarray(aslo, dtype=float).reshape(len(ab), n_metrics)
    ints = lambda a: a.astype(np.int64)  # noqa: E731 - tiny local cast
    return Observations(ints(lw), ints(lt), ints(lm), ll.astype(float), lv.astype(float),
                        ints(uw), ints(ut), uv.astype(float), ints(sw), ints(st), sv.astype(float),
                        ints(aw), ints(at), al.astype(float), ab_log_slo)
