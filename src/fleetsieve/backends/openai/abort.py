"""Early abort of a run that is clearly infeasible.

Two rules, checked by the load generator every ``check_interval_s`` of run time:

1. **Tail above the SLO, with confidence** (SLOs on a quantile of TTFT or E2E latency, e.g.
   ``p99_e2el_ms``). A request sent at least ``bound`` seconds ago is *decided*: either it
   finished (its latency is known) or it is still waiting, and then it has certainly
   exceeded the bound. Among the ``n`` decided requests of the measurement window, let ``k``
   exceed the bound. If the true q-quantile were <= bound, each would exceed it with
   probability <= 1 - q, so ``P(K >= k) <= BinomialSF(k - 1; n, 1 - q)``. This is the
   distribution-free order-statistic bound: the (n-k+1)-th smallest decided latency is a
   lower confidence bound for the q-quantile. We abort when that probability is below
   ``alpha / max_looks`` (Bonferroni over the planned number of checks, so repeated looks
   keep the overall false-abort rate <= alpha). Caveat: requests under one queue are not
   independent; the bound treats them as if they were.
2. **Backlog keeps growing.** Requests on the wire exceed ``backlog_factor x rate x horizon``
   (Little's law: a system meeting a latency bound ``horizon`` holds about ``rate x horizon``
   requests) and grew at each of the last ``growth_checks`` checks.

TPOT and ITL SLOs are not used for aborting: an unfinished request does not decide them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

from fleetsieve.backends.openai.loadgen import RunSnapshot
from fleetsieve.backends.openai.timing import Window

ABORTABLE_KINDS = ("ttft", "e2el")


def parse_quantile_slo(key: str) -> tuple[str, float] | None:
    """``"p99_e2el_ms"`` -> ``("e2el", 0.99)``; None for SLOs the abort rule cannot use."""
    parts = key.split("_")
    if len(parts) != 3 or parts[2] != "ms" or parts[1] not in ABORTABLE_KINDS:
        return None
    stat = parts[0]
    if stat == "median":
        return parts[1], 0.5
    if stat.startswith("p"):
        try:
            return parts[1], float(stat[1:]) / 100.0
        except ValueError:
            return None
    return None


def exceedance_p_value(violations: int, decided: int, quantile: float) -> float:
    """P(at least ``violations`` of ``decided`` exceed the bound | the quantile meets it)."""
    if violations <= 0 or decided <= 0:
        return 1.0
    from scipy.special import bdtrc  # BinomialSF(k; n, p); imported here to keep CLI start-up fast

    return float(bdtrc(violations - 1, decided, 1.0 - quantile))


@dataclass(frozen=True)
class TailCount:
    """Decided requests and how many of them exceed the bound."""

    decided: int
    violations: int


def count_tail(snapshot: RunSnapshot, window: Window, kind: str, bound_s: float) -> TailCount:
    """Decided window requests for one latency kind and how many exceed ``bound_s``."""
    cutoff = snapshot.now_s - bound_s
    decided = violations = 0
    for r in snapshot.finished:
        if window.holds(r.scheduled_s) and r.start_s <= cutoff and (r.ok or r.error.startswith("timeout")):
            decided += 1
            value = r.ttft_s if kind == "ttft" else r.e2el_s
            violations += int(not r.ok or value > bound_s)
    for f in snapshot.in_flight:
        if window.holds(f.scheduled_s) and f.start_s <= cutoff:
            decided += 1
            first = f.first_token_s
            violations += int(kind == "e2el" or math.isnan(first) or first - f.start_s > bound_s)
    return TailCount(decided, violations)


@dataclass
class AbortRule:
    """A watcher for :func:`fleetsieve.backends.openai.loadgen.run_load` (see module doc)."""

    slo: Mapping[str, float]
    window: Window
    rate_rps: float
    max_looks: int
    alpha: float = 0.05
    horizon_s: float = 60.0
    backlog_factor: float = 3.0
    min_backlog: int = 20
    growth_checks: int = 3
    _backlog: list[int] = field(default_factory=list)

    def __call__(self, snapshot: RunSnapshot) -> str | None:
        return self._tail(snapshot) or self._growing_backlog(snapshot)

    def _tail(self, snapshot: RunSnapshot) -> str | None:
        threshold = self.alpha / max(1, self.max_looks)
        for key, bound_ms in self.slo.items():
            parsed = parse_quantile_slo(key)
            if parsed is None:
                continue
            kind, q = parsed
            tail = count_tail(snapshot, self.window, kind, bound_ms / 1e3)
            p = exceedance_p_value(tail.violations, tail.decided, q)
            if p < threshold:
                return (f"{key} above the SLO {bound_ms:g} ms with confidence: {tail.violations} of "
                        f"{tail.decided} decided requests exceed it (binomial p={p:.2g} < {threshold:.2g})")
        return None

    def _growing_backlog(self, snapshot: RunSnapshot) -> str | None:
        backlog = len(snapshot.in_flight)
        self._backlog.append(backlog)
        limit = max(self.min_backlog, self.backlog_factor * self.rate_rps * self.horizon_s)
        recent = self._backlog[-(self.growth_checks + 1):]
        growing = len(recent) == self.growth_checks + 1 and all(b > a for a, b in zip(recent, recent[1:]))
        if backlog > limit and growing:
            return (f"backlog keeps growing: {backlog} requests in flight (> {limit:.0f} = "
                    f"{self.backlog_factor:g} x {self.rate_rps:g} req/s x {self.horizon_s:g} s) and rising")
        return None


def slo_horizon_s(slo: Mapping[str, float] | None, default_s: float) -> float:
    """The longest latency bound among the SLOs, in seconds (``default_s`` when none)."""
    bounds = [v / 1e3 for k, v in (slo or {}).items() if parse_quantile_slo(k) and k.split("_")[1] == "e2el"]
    return max(bounds) if bounds else default_s
