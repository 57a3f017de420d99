"""Everything ``fleetsieve compare`` computes, gathered in one frozen result."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from fleetsieve.evaluate.bootstrap import Saving, saving_vs_random
from fleetsieve.evaluate.experiment import Experiment, StrategyFactory, run_experiment
from fleetsieve.evaluate.hindsight import HindsightCertificate, hindsight_certificate
from fleetsieve.evaluate.loss import SPARSE_FRACTIONS, CapacityOnlyDecision, Loss, capacity_only_decision, sparse_random_loss
from fleetsieve.evaluate.truth import build_truth
from fleetsieve.grid import Grid
from fleetsieve.knowledge import VerdictRule, all_repeats_rule
from fleetsieve.spec import FleetSpec

BASELINE = "random"
COST_KINDS = ("cost_to_oracle_gpu_s", "cost_to_certificate_gpu_s")


@dataclass(frozen=True)
class CompareOptions:
    """How to run the comparison. ``noise_aware`` None: on when the grid has 3 repeats per cell."""

    orders: int = 200
    seed: int = 0
    noise_aware: bool | None = None
    workers: int | None = None
    per_workload: bool = True
    hindsight_time_limit_s: float = 60.0


@dataclass(frozen=True)
class WorkloadResult:
    """The experiment on the spec restricted to one workload (same GPU budget)."""

    experiment: Experiment
    savings: Mapping[str, Mapping[str, Saving]]
    hindsight: HindsightCertificate


@dataclass(frozen=True)
class CompareResult:
    """``savings[kind][strategy]`` for kind in ``COST_KINDS``; empty when random was not run."""

    experiment: Experiment
    rule_name: str
    savings: Mapping[str, Mapping[str, Saving]]
    per_workload: Mapping[str, WorkloadResult]
    hindsight: HindsightCertificate
    losses: tuple[Loss, ...]
    capacity_only: CapacityOnlyDecision


def verdict_rule(noise_aware: bool | None, repeats: int) -> tuple[str, VerdictRule]:
    """The replay's verdict rule for a grid of up to ``repeats`` runs per cell.

    Noise-aware when asked for, and by default once cells have the ``MIN_REPEATS_FOR_SPREAD`` (3)
    repeats its spread statement needs (see ``noise_aware_rule_for_repeats``).
    """
    from fleetsieve.noise import MIN_REPEATS_FOR_SPREAD, noise_aware_rule_for_repeats  # scipy.special: only here

    if not (noise_aware if noise_aware is not None else repeats >= MIN_REPEATS_FOR_SPREAD):
        return "all-repeats", all_repeats_rule
    return "noise-aware", noise_aware_rule_for_repeats(repeats)


def savings_table(experiment: Experiment, seed: int) -> dict[str, dict[str, Saving]]:
    """Savings vs random for every strategy and both cost kinds (empty without random)."""
    if BASELINE not in experiment.outcomes:
        return {}
    return {kind: {name: saving_vs_random(experiment.costs(name, kind), experiment.costs(BASELINE, kind), seed)
                   for name in experiment.strategies} for kind in COST_KINDS}


def _per_workload(spec: FleetSpec, grid: Grid, factories: Mapping[str, StrategyFactory], options: CompareOptions,
                  rule: VerdictRule, tick: Callable[[], None]) -> dict[str, WorkloadResult]:
    out = {}
    for w in spec.workloads:
        truth = build_truth(spec.restricted_to(w), grid, rule)
        exp = run_experiment(truth, factories, options.orders, options.seed, rule, options.workers, tick)
        out[w] = WorkloadResult(exp, savings_table(exp, options.seed), hindsight_certificate(truth, options.hindsight_time_limit_s))
    return out


def run_compare(spec: FleetSpec, grid: Grid, factories: Mapping[str, StrategyFactory], options: CompareOptions,
                tick: Callable[[], None] | None = None) -> CompareResult:
    """The full comparison: main experiment, per-workload experiments, physical limit and losses."""
    tick = tick or (lambda: None)
    rule_name, rule = verdict_rule(options.noise_aware, grid.max_runs_per_cell)
    truth = build_truth(spec, grid, rule)
    experiment = run_experiment(truth, factories, options.orders, options.seed, rule, options.workers, tick)
    per_workload = _per_workload(spec, grid, factories, options, rule, tick) if options.per_workload and len(spec.workloads) > 1 else {}
    losses = tuple(sparse_random_loss(truth, f, options.orders, options.seed, rule) for f in SPARSE_FRACTIONS)
    return CompareResult(experiment, rule_name, savings_table(experiment, options.seed), per_workload,
                         hindsight_certificate(truth, options.hindsight_time_limit_s), losses, capacity_only_decision(truth))


def total_ticks(spec: FleetSpec, options: CompareOptions) -> int:
    """How many orders a comparison replays (for a progress bar)."""
    extra = len(spec.workloads) if options.per_workload and len(spec.workloads) > 1 else 0
    return options.orders * (1 + extra)


def strategy_names(requested: Sequence[str] | None, registered: Sequence[str]) -> list[str]:
    """The strategies to compare: the requested ones, else every registered one (random first)."""
    names = list(requested) if requested else sorted(registered, key=lambda n: (n != BASELINE, n))
    return names
