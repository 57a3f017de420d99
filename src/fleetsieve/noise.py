"""Noise-aware verdicts: a cell is feasible or infeasible only when a confidence statement says so.

``noise_aware_rule(confidence)`` returns a ``VerdictRule`` (see ``knowledge.py``). Each SLO metric
gets an interval for its true value from two sources; a cell is

* INFEASIBLE when some run was aborted as infeasible or fell behind its load (as in the plain
  rule), or some metric's lower confidence bound is over its SLO;
* FEASIBLE when no run fell behind and every metric's upper confidence bound is within its SLO;
* INDETERMINATE otherwise (or when the sources contradict each other); a strategy may buy a repeat;
* INFEASIBLE, too, when it is still indeterminate after ``settle_after`` distinct runs: a cell that
  repeats cannot show to meet its SLO is not one to run at that load (the paper's "boundary
  repeats", with a stopping rule). This also makes the full-grid truth crisp, so a decision can
  be certified at all; ``settle_after=None`` keeps such a cell indeterminate for ever.

Confidence: ``confidence`` per cell, split evenly over its SLO metrics (Bonferroni), so every
one-sided statement is made at ``1 - (1 - confidence) / n_metrics``.

Source 1, order statistics of one run (``completed`` requests, assumed i.i.d. draws from the
cell's latency distribution, which is continuous). The reported ``pXX`` is numpy's linear
interpolation at rank ``(n-1)*XX/100``, so it lies between two order statistics. For the true
q-quantile, ``P(X_(j) <= q) = P(Binom(n, q) >= j)``: a reported lower quantile (p90 for a p99 SLO)
is a distribution-free lower bound once that probability reaches the confidence, and a
reported higher quantile (p90 for a p50 SLO) an upper bound when ``P(Binom(n, q) <= j-1)`` does.
Nothing above p99 is reported, so the upper bound of a p99 is semi-parametric: the binomial
bound gives the rank ``u`` the true p99 can reach, and the tail between the reported p90 and
p99 is assumed no heavier than exponential, ``Q(u) <= p90 + (p99 - p90) * ln(0.1/(1-u)) / ln(10)``.
The lower bound uses the same curve at the lowest rank the true p99 can sit at (between 0.9 and
0.99): there it interpolates between two reported quantiles rather than extrapolating, so a
single run well over the SLO can be called infeasible without waiting for repeats.
Means are compared at face value (their sampling error is far below a tail quantile's).
Requests of one run are not really independent (they queue behind each other, and the arrival
sequence and warm-up differ between runs), so a single run's interval is further widened by a
run-to-run log-normal spread ``run_sd`` (default 0.1, i.e. about 10% on a tail latency):
``[lo * exp(-z * run_sd), hi * exp(z * run_sd)]`` with z the one-sided normal quantile.

Throughput: a run falls behind when its ``request_throughput`` is under
``(1 - saturation_tol) * load`` by more than count noise allows. Its completions over its window
(``completed / request_throughput`` seconds) are compared with a Poisson count whose mean is the
threshold rate times that window; the run falls behind when so few completions have probability
under ``1 - level`` at the threshold. Keeping up is the null hypothesis: a shortfall within count
noise (a 300 s run at 1 req/s counts about 300 +- 17 requests) is not evidence of saturation, while
real saturation (far behind) is. The plain rule, by contrast, takes every shortfall at face value.

Source 2, repeats (``MIN_REPEATS_FOR_SPREAD`` = 3 or more OK runs with distinct ``repeat``
numbers; a run handed back twice counts once): a one-sided Student-t interval on the mean of
log(metric) across repeats, assuming run-to-run noise is log-normal and independent, widened by
half the run-to-run spread because a sample tail quantile is biased low at small request counts. Two runs are
not enough: their spread is one number, and two close values by chance give a tight interval
that a third run then widens, so a cell would flip from feasible to indeterminate as evidence grows.
"""

from __future__ import annotations

import functools

import math
import re
from typing import Mapping, Sequence

import numpy as np
from scipy.special import bdtr, bdtrc, ndtri, pdtr, stdtrit

from fleetsieve.errors import InputError
from fleetsieve.records import Measurement, Status, Verdict

_PERCENTILE = re.compile(r"^(p(\d+)|median)_(\w+)_ms$")
_REPORTED = (("p50", 0.50), ("p90", 0.90), ("p99", 0.99))
#: Fewest distinct repeats whose spread the rule trusts (see the module docstring).
MIN_REPEATS_FOR_SPREAD = 3
#: Share of ``run_sd`` by which the repeats' interval is widened: a sample p99 of 150 log-normal
#: (sigma 0.8) requests sits below the true p99, and without it three repeats with a true p99 2%
#: over the SLO were called feasible 13% of the time; with it, 4.5% (1,000 trials; tests/test_noise.py).
REPEAT_BIAS_SHARE = 0.5


def _quantile_of(key: str) -> tuple[float, str] | None:
    """(q, latency kind) for keys like ``p99_e2el_ms``; None for means."""
    match = _PERCENTILE.match(key)
    if not match:
        return None
    q = 0.5 if match.group(1) == "median" else int(match.group(2)) / 100
    return q, match.group(3)


def _reported(run: Measurement, kind: str) -> list[tuple[float, float]]:
    """(probability, value) of the quantiles of ``kind`` the run reports, ascending."""
    out = [(p, run.metric(f"{stat}_{kind}_ms")) for stat, p in _REPORTED]
    return [(p, v) for p, v in out if math.isfinite(v)]


# Verdicts are recomputed at every step of every replay, but the binomial terms depend only on
# (rank, request count, quantile, level): cache them, and use scipy.special's direct functions.
@functools.lru_cache(maxsize=1 << 16)
def _binom_sf(k: int, n: int, q: float) -> float:
    """P(Binom(n, q) > k)."""
    return float(bdtrc(k, n, q))


@functools.lru_cache(maxsize=1 << 16)
def _binom_cdf(k: int, n: int, q: float) -> float:
    """P(Binom(n, q) <= k)."""
    return float(bdtr(k, n, q))


@functools.lru_cache(maxsize=1 << 14)
def _binom_ppf(level: float, n: int, q: float) -> int:
    """Smallest k with P(Binom(n, q) <= k) >= level."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) // 2
        if _binom_cdf(mid, n, q) >= level:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _lower_bound(reported: list[tuple[float, float]], q: float, n: int, level: float) -> float:
    """Largest value that the true q-quantile exceeds with probability >= level."""
    best = -math.inf
    for p, value in reported:
        j = math.ceil((n - 1) * p) + 1  # the reported value is at most X_(j)
        if p <= q and _binom_sf(j - 1, n, q) >= level:
            best = max(best, value)
    return max(best, _tail_lower_bound(reported, q, n, level))


def _tail_lower_bound(reported: list[tuple[float, float]], q: float, n: int, level: float) -> float:
    """The (p90, p99) curve at the lowest rank the true quantile can sit at (interpolation only)."""
    values = dict(reported)
    if q <= 0.9 or 0.9 not in values or 0.99 not in values:
        return -math.inf
    rank = n - _binom_ppf(level, n, 1.0 - q)  # P(Binom(n, q) >= rank) >= level
    u = rank / (n + 1)
    if rank < 1 or u <= 0.9:
        return -math.inf
    spread = max(values[0.99] - values[0.9], 0.0)
    return values[0.9] + spread * math.log(0.1 / (1 - min(u, 0.99))) / math.log(10)


def _upper_bound(reported: list[tuple[float, float]], q: float, n: int, level: float) -> float:
    """Smallest value the true q-quantile stays under with probability >= level."""
    best = math.inf
    for p, value in reported:
        j = math.floor((n - 1) * p) + 1  # the reported value is at least X_(j)
        if p >= q and _binom_cdf(j - 1, n, q) >= level:
            best = min(best, value)
    return min(best, _tail_upper_bound(reported, q, n, level))


def _tail_upper_bound(reported: list[tuple[float, float]], q: float, n: int, level: float) -> float:
    """Exponential-tail extrapolation from (p90, p99) to the rank the true quantile can reach."""
    values = dict(reported)
    if q <= 0.9 or 0.9 not in values or 0.99 not in values:
        return math.inf
    rank = _binom_ppf(level, n, q) + 1  # P(Binom(n, q) <= rank - 1) >= level
    if rank >= n:  # the sample maximum or beyond: no finite extrapolation reaches it
        return math.inf
    u = (rank - 1) / (n - 1)  # X_(rank)'s position in numpy's convention, the one p90 and p99 were read in
    if u <= 0.9:
        return values[0.99]
    spread = max(values[0.99] - values[0.9], 0.0)
    return values[0.9] + spread * math.log(0.1 / (1 - u)) / math.log(10)


def run_interval(run: Measurement, key: str, level: float) -> tuple[float, float]:
    """(lower, upper) confidence bounds on the true value of ``key`` from one OK run."""
    parsed = _quantile_of(key)
    value = run.metric(key)
    n = run.completed or run.num_requests
    if parsed is None or n <= 1:
        return (value, value) if parsed is None else (-math.inf, math.inf)
    q, kind = parsed
    reported = _reported(run, kind)
    if not any(abs(p - q) < 1e-9 for p, _ in reported) and math.isfinite(value):
        reported = sorted(reported + [(q, value)])
    return _lower_bound(reported, q, n, level), _upper_bound(reported, q, n, level)


def repeat_interval(values: Sequence[float], level: float) -> tuple[float, float]:
    """One-sided t bounds (each at ``level``) on the typical value across repeats."""
    logs = np.log(np.asarray([v for v in values if v > 0 and math.isfinite(v)], dtype=float))
    if len(logs) < MIN_REPEATS_FOR_SPREAD:
        return -math.inf, math.inf
    half = float(stdtrit(len(logs) - 1, level)) * float(logs.std(ddof=1)) / math.sqrt(len(logs))
    return float(math.exp(logs.mean() - half)), float(math.exp(logs.mean() + half))


def _widened(interval: tuple[float, float], level: float, run_sd: float) -> tuple[float, float]:
    spread = math.exp(float(ndtri(level)) * run_sd)
    return interval[0] / spread, interval[1] * spread


def _metric_claim(runs: Sequence[Measurement], key: str, bound: float, level: float, run_sd: float) -> str:
    """'over', 'under' or 'unknown' for one SLO metric, from every source."""
    intervals = [_widened(run_interval(m, key, level), level, run_sd) for m in runs]
    # The repeats' interval is on the typical sample quantile, which sits below the true one at
    # small request counts, so it is widened too (see REPEAT_BIAS_SHARE).
    intervals.append(_widened(repeat_interval([m.metric(key) for m in runs], level), level, REPEAT_BIAS_SHARE * run_sd))
    over = any(lo > bound for lo, _ in intervals)
    under = any(hi <= bound for _, hi in intervals)
    if over == under:
        return "unknown"
    return "over" if over else "under"


def falls_behind(run: Measurement, load_rps: float, saturation_tol: float, level: float) -> bool:
    """Throughput short of ``(1 - saturation_tol) * load`` beyond count noise (see the module docstring)."""
    throughput, threshold = run.metric("request_throughput"), (1.0 - saturation_tol) * load_rps
    if not throughput < threshold:
        return False
    if throughput <= 0 or run.completed <= 0:
        return True
    window_s = run.completed / throughput
    return _poisson_cdf(run.completed, threshold * window_s) < 1.0 - level


@functools.lru_cache(maxsize=1 << 14)
def _poisson_cdf(k: int, mean: float) -> float:
    """P(Poisson(mean) <= k)."""
    return float(pdtr(k, mean))


def _distinct_repeats(runs: Sequence[Measurement]) -> list[Measurement]:
    """One run per repeat number: a replay may hand back the same repeat twice, which is not new evidence."""
    seen: dict[int, Measurement] = {}
    for m in runs:
        seen.setdefault(m.repeat, m)
    return list(seen.values())


def _usable_runs(runs: Sequence[Measurement]) -> list[Measurement]:
    """Runs that say something (a failed run does not), one per repeat number."""
    return _distinct_repeats([m for m in runs if m.status is not Status.FAILED])


def _confident_verdict(usable: Sequence[Measurement], slo: Mapping[str, float], load_rps: float,
                       saturation_tol: float, confidence: float, run_sd: float) -> Verdict:
    if not usable:
        return Verdict.UNMEASURED
    if any(m.status is Status.ABORTED_INFEASIBLE for m in usable):
        return Verdict.INFEASIBLE
    level = 1.0 - (1.0 - confidence) / max(len(slo), 1)
    if any(falls_behind(m, load_rps, saturation_tol, level) for m in usable):
        return Verdict.INFEASIBLE
    claims = [_metric_claim(usable, key, bound, level, run_sd) for key, bound in slo.items()]
    if "over" in claims:
        return Verdict.INFEASIBLE
    if all(c == "under" for c in claims):
        return Verdict.FEASIBLE
    return Verdict.INDETERMINATE


def single_run_can_show_under(n: int, q: float, level: float) -> bool:
    """Whether one run of ``n`` requests can ever bound its true q-quantile from above at ``level``.

    The bound is an order statistic below the sample maximum (the p90-p99 curve cannot be
    extrapolated to the maximum); for a p99 at 97.5 % that takes n >= 555, at 95 % n >= 473.
    Below that, feasibility needs the spread of ``MIN_REPEATS_FOR_SPREAD`` repeats.
    """
    return n >= 2 and _binom_ppf(level, n, q) + 1 < n


class NoiseAwareRule:
    """The noise-aware ``VerdictRule`` (see the module docstring); build it with ``noise_aware_rule``.

    A plain class with plain attributes, so it pickles into the evaluation's process pool.
    """

    def __init__(self, confidence: float, run_sd: float, settle_after: int | None) -> None:
        self.confidence, self.run_sd, self.settle_after = confidence, run_sd, settle_after

    def __call__(self, runs: Sequence[Measurement], slo: Mapping[str, float], load_rps: float,
                 saturation_tol: float) -> Verdict:
        usable = _usable_runs(runs)
        verdict = _confident_verdict(usable, slo, load_rps, saturation_tol, self.confidence, self.run_sd)
        settled = self.settle_after is not None and len(usable) >= self.settle_after
        return Verdict.INFEASIBLE if verdict is Verdict.INDETERMINATE and settled else verdict

    @property
    def provable_margin(self) -> float:
        """Roughly how far under its SLO a tail must be for this rule to call it feasible (a ratio)."""
        return math.exp(-float(ndtri(self.confidence)) * self.run_sd)

    def runs_to_show_feasible(self, slo: Mapping[str, float], expected_requests: float) -> int:
        """Runs a cell of about ``expected_requests`` requests per run needs before it can be FEASIBLE."""
        level = 1.0 - (1.0 - self.confidence) / max(len(slo), 1)
        quantiles = [parsed[0] for key in slo if (parsed := _quantile_of(key)) is not None and parsed[0] > 0.9]
        if all(single_run_can_show_under(int(expected_requests), q, level) for q in quantiles):
            return 1
        return MIN_REPEATS_FOR_SPREAD


def noise_aware_rule(confidence: float = 0.95, run_sd: float = 0.1, settle_after: int | None = 3) -> NoiseAwareRule:
    """The noise-aware ``VerdictRule`` at ``confidence`` (see the module docstring)."""
    if not 0.5 <= confidence < 1.0:
        raise InputError("confidence", f"must be in [0.5, 1), got {confidence}")
    if not 0.0 <= run_sd < 2.0:
        raise InputError("run_sd", f"must be in [0, 2), got {run_sd}")
    if settle_after is not None and settle_after < 1:
        raise InputError("settle_after", f"must be at least 1 run, got {settle_after}")
    return NoiseAwareRule(confidence, run_sd, settle_after)


def noise_aware_rule_for_repeats(repeats: int) -> NoiseAwareRule:
    """The noise-aware rule for cells of up to ``repeats`` runs: an indeterminate cell settles as
    infeasible after all of them, but only from ``MIN_REPEATS_FOR_SPREAD``; with fewer, a cell of few
    requests could never be shown feasible, and settling would call it infeasible whatever its tail."""
    return noise_aware_rule(settle_after=repeats if repeats >= MIN_REPEATS_FOR_SPREAD else None)
