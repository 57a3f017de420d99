"""Per-order outcome of one strategy's replay: what it cost to reach the oracle and the certificate."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from fleetsieve.evaluate.replay import Trace


@dataclass(frozen=True)
class OrderOutcome:
    """The figures one replay contributes (all costs in GPU-seconds).

    * ``cost_to_oracle_gpu_s``: spent when the recommendation's true objective became the oracle's
      for good, over the whole replay (an any-time figure: for random and exhaustive, which the
      replay runs to the end, it may lie past where a campaign would stop); when it never did
      (the strategy stopped first, or the replay was capped), everything spent, with
      ``reached_oracle`` false.
    * ``cost_to_certificate_gpu_s``: spent when the gap first fell within tolerance; when it never
      did, everything spent, with ``certified`` false.
    * ``final_is_oracle`` / ``slo_violation``: the decision where the campaign stops (the
      strategy's own stop; the first certificate for a certificate-blind strategy) has the
      oracle's objective / misses an SLO in truth.
    """

    strategy: str
    order: int
    cost_to_oracle_gpu_s: float
    reached_oracle: bool
    cost_to_certificate_gpu_s: float
    certified: bool
    final_is_oracle: bool
    slo_violation: bool
    total_gpu_s: float
    reveals: int
    stopped_by_strategy: bool
    capped: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _cost_to_oracle(trace: Trace) -> tuple[float, bool]:
    steps = trace.steps
    if not steps[-1].is_oracle:
        return steps[-1].gpu_s, False
    last_miss = max((i for i, s in enumerate(steps) if not s.is_oracle), default=-1)
    return steps[last_miss + 1].gpu_s, True


def _cost_to_certificate(trace: Trace) -> tuple[float, bool]:
    first = next((s for s in trace.steps if s.certified), None)
    return (first.gpu_s, True) if first is not None else (trace.steps[-1].gpu_s, False)


def outcome_of(trace: Trace) -> OrderOutcome:
    """Reduce a replay trace to its per-order figures."""
    to_oracle, reached = _cost_to_oracle(trace)
    to_certificate, certified = _cost_to_certificate(trace)
    return OrderOutcome(
        strategy=trace.strategy, order=trace.order,
        cost_to_oracle_gpu_s=to_oracle, reached_oracle=reached,
        cost_to_certificate_gpu_s=to_certificate, certified=certified,
        final_is_oracle=trace.final_is_oracle, slo_violation=trace.slo_violation,
        total_gpu_s=trace.steps[-1].gpu_s, reveals=len(trace.steps) - 1,
        stopped_by_strategy=trace.stopped_by_strategy, capped=trace.capped,
    )
