"""``sieve``: measure the cell that most shrinks the decision gap per GPU-second.

One step:

1. If the decision is certified (gap within tolerance), confirm the levels up to ``lo`` of the
   configurations in use: each needs a verdict of its own from at least ``confirm_runs`` runs
   (the bounds infer those levels from monotonicity; a real grid is not always monotone, and the
   oracle counts a capacity only up to the first failing level), then stop.
2. Fit the joint capacity/tail model to every measurement and turn its P(feasible) per level
   into a capacity distribution per unresolved configuration (conditioned on the bounds).
3. Lookahead: draw capacity vectors from those distributions; for each, find an irreducible
   certificate plan (``_plans``). A cell's plan frequency is the share of draws needing it.
4. Myopic term: for each candidate, the expected drop of the tolerance-normalised gap over its
   two outcomes, weighted by the model's P(feasible). A cell's cost is its GPU-seconds times the
   runs it is expected to take: a noise-aware rule cannot show a cell of few requests feasible
   from one run (``NoiseAwareRule.runs_to_show_feasible``), so such a cell costs its repeats.
5. Only decision-relevant cells (an outcome moves the conservative objective or the optimistic
   bound) may be proposed. Score = (plan frequency + weight * expected gap drop) / GPU-seconds.
   Should no single cell be relevant while the gap is open (only a pair could move it; not
   seen in the property tests), the most-needed plan cell is taken so a campaign never stalls.

The certificate and the recommendation come from the monotone bounds alone, never from the
model, so a wrong model can only cost GPU-seconds, not a wrong decision.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Callable, ClassVar

import numpy as np
from pydantic import Field

from fleetsieve.knowledge import Config, Knowledge
from fleetsieve.model import CapacityDistribution, JointTailModel, capacity_distribution
from fleetsieve.records import CapacityBounds, Cell, Decision, Verdict
from fleetsieve.strategies._common import DEFAULT_MAX_RUNS_PER_CELL, open_levels, unresolved
from fleetsieve.strategies._plans import certificate_plan
from fleetsieve.strategies._whatif import DecisionCache, outcomes, potential
from fleetsieve.strategies.base import ProfilingState, Strategy, StrategyArgs


class SieveArgs(StrategyArgs):
    samples: int = Field(default=6, ge=0, description="capacity draws for the certificate-plan lookahead")
    myopic_weight: float = Field(default=0.5, ge=0, description="weight of the one-step expected gap drop")
    conservative_weight: float = Field(default=3.0, ge=0, description="extra weight of the gap drop a feasible outcome brings "
                                       "(it raises the recommendation itself, so cost-to-oracle falls sooner)")
    prior_mix: float = Field(default=0.1, ge=0, le=1, description="uniform share mixed into the model's capacity beliefs")
    use_model: bool = Field(default=True, description="False: uniform beliefs within the bounds")
    max_runs_per_cell: int = Field(default=DEFAULT_MAX_RUNS_PER_CELL, ge=1)
    finish_started: bool = Field(default=True, description="repeat a decision-relevant cell that is still "
                                 "indeterminate before opening a new one")
    confirm_runs: int = Field(default=1, ge=0, description="once certified, runs wanted of every level up to lo of the "
                              "configurations in use, on top of a verdict of its own (0: stop at the certificate); "
                              "use the grid's repeat count under the plain all-repeats rule")


@dataclass(frozen=True)
class _Scored:
    cell: Cell
    score: float


class Sieve(Strategy):
    """Decision-critical profiling; see the module docstring."""

    name: ClassVar[str] = "sieve"
    Args: ClassVar[type[StrategyArgs]] = SieveArgs

    def propose(self, state: ProfilingState, n: int = 1) -> list[Cell]:
        k = state.knowledge
        cache = DecisionCache(k.spec)
        bounds = k.bounds()
        now = cache(bounds)
        if n <= 0:
            return []
        if now.certified:
            return _confirmations(state, bounds, now, self.args.confirm_runs, self.args.max_runs_per_cell)[:n]
        open_cells = {cfg: open_levels(state, cfg, bounds[cfg], self.args.max_runs_per_cell) for cfg in unresolved(bounds)}
        beliefs = self._beliefs(k, bounds)
        rng = np.random.default_rng([state.seed, len(k.runs), sum(len(v) for v in k.runs.values())])
        cost = effective_cost(k)
        freq = self._plan_frequency(k, cache, bounds, beliefs, rng, cost)
        scored: list[_Scored] = []
        if self.args.finish_started:
            # Finish what was started: a cell still indeterminate after some runs is repeated before a
            # new one is opened, while it can still move the decision (its runs so far are paid for).
            started = {cfg: [L for L in levels if Cell(*cfg, L) in k.runs] for cfg, levels in open_cells.items()}
            scored = self._score(k, cache, bounds, now, started, beliefs, freq, cost, only_planned=False)
        if not scored:
            scored = self._score(k, cache, bounds, now, open_cells, beliefs, freq, cost, only_planned=True)
        if not scored:
            scored = self._score(k, cache, bounds, now, open_cells, beliefs, freq, cost, only_planned=False)
        if not scored:
            scored = _stalled(k, open_cells, freq)
        if not scored:  # nothing left can move the gap (e.g. cells that stay indeterminate)
            return _confirmations(state, bounds, now, self.args.confirm_runs, self.args.max_runs_per_cell)[:n]
        return _batch(scored, n, rng)

    def _beliefs(self, k: Knowledge, bounds: dict[Config, CapacityBounds]) -> dict[Config, CapacityDistribution]:
        configs = unresolved(bounds)
        p_feasible = _model_p_feasible(k, configs) if self.args.use_model else {}
        out = {}
        for cfg in configs:
            levels = k.space.levels[cfg]
            p = p_feasible.get(cfg, np.full(len(levels), 0.5))
            mix = self.args.prior_mix if cfg in p_feasible else 1.0
            out[cfg] = capacity_distribution(levels, p, bounds[cfg], mix)
        return out

    def _plan_frequency(self, k: Knowledge, cache: DecisionCache, bounds: dict[Config, CapacityBounds],
                        beliefs: dict[Config, CapacityDistribution], rng: np.random.Generator,
                        cost: Callable[[Cell], float]) -> Counter[Cell]:
        counts: Counter[Cell] = Counter()
        for _ in range(self.args.samples):
            kappa = {cfg: d.sample(rng) for cfg, d in beliefs.items()}
            counts.update(certificate_plan(cache, bounds, k.space.levels, kappa, cost, rng))
        return counts

    def _score(self, k: Knowledge, cache: DecisionCache, bounds: dict[Config, CapacityBounds], now: Decision,
               open_cells: dict[Config, list[float]], beliefs: dict[Config, CapacityDistribution],
               freq: Counter[Cell], cost: Callable[[Cell], float], only_planned: bool) -> list[_Scored]:
        scored = []
        for cfg, levels in open_cells.items():
            for cell in (Cell(*cfg, load) for load in levels):
                if only_planned and not freq[cell]:
                    continue
                value = self._value(k, cache, bounds, now, cell, beliefs[cfg].prob_at_least(cell.load_rps), freq[cell])
                if value is not None:
                    scored.append(_Scored(cell, value / cost(cell)))
        return scored

    def _value(self, k: Knowledge, cache: DecisionCache, bounds: dict[Config, CapacityBounds], now: Decision,
               cell: Cell, p: float, planned: int) -> float | None:
        """Plan share plus weighted expected gap drop (normalised); None when no outcome moves the decision."""
        after = outcomes(cache, bounds, k.space.levels[cell.config], cell)
        if not after.relevant(now):
            return None
        g0 = max(potential(k.spec, now), 1e-12)
        gain_if_feasible = max(g0 - potential(k.spec, after.feasible), 0.0)
        drop = p * gain_if_feasible + (1 - p) * max(g0 - potential(k.spec, after.infeasible), 0.0)
        share = planned / max(self.args.samples, 1)
        return share + (self.args.myopic_weight * drop + self.args.conservative_weight * p * gain_if_feasible) / g0


def effective_cost(k: Knowledge) -> Callable[[Cell], float]:
    """GPU-seconds to a verdict: a cell of few requests tends to settle only after its repeats,
    whatever its outcome, so it costs them (used by the lookahead plans and the scores alike)."""
    yield_ratio = completed_share(k)
    return lambda cell: k.space.cost(cell) * runs_to_show_feasible(k, cell, yield_ratio)


def completed_share(k: Knowledge) -> float:
    """Median share of offered requests a run reports as completed (warm-up excluded); 1 without data."""
    shares = [m.completed / (m.cell.load_rps * m.duration_s) for ms in k.runs.values() for m in ms
              if m.completed and m.duration_s > 0 and m.cell.load_rps > 0]
    return float(np.median(shares)) if shares else 1.0


def runs_to_show_feasible(k: Knowledge, cell: Cell, yield_ratio: float) -> int:
    """Runs still needed before ``cell`` can be shown feasible: a noise-aware rule may need repeats
    for a cell with few requests, which makes such a cell dearer than its one-run cost."""
    needed = getattr(k.verdict_rule, "runs_to_show_feasible", None)
    if needed is None:
        return 1
    expected_requests = cell.load_rps * (k.space.cost(cell) / cell.tp) * yield_ratio
    total = needed(k.spec.workloads[cell.workload].slo, expected_requests)
    return max(total - len(k.runs.get(cell, ())), 1)


def _model_p_feasible(k: Knowledge, configs: list[Config]) -> dict[Config, np.ndarray]:
    """P(feasible) per level of each configuration from the joint model (empty without data)."""
    measurements = [m for ms in k.runs.values() for m in ms]
    if not measurements or not configs:
        return {}
    model = JointTailModel(saturation_tol=k.spec.saturation_tol).fit(
        measurements, slo={w: wl.slo for w, wl in k.spec.workloads.items()}, tps=k.spec.tp_degrees)
    cells = [Cell(*cfg, L) for cfg in configs for L in k.space.levels[cfg]]
    # A noise-aware rule calls a cell feasible only with a margin under the SLO: a tail just under
    # it ends indeterminate (and settles infeasible), so the chance that matters is of clearing the margin.
    p = model.predict(cells, slo_margin=getattr(k.verdict_rule, "provable_margin", 1.0)).p_feasible()
    out, i = {}, 0
    for cfg in configs:
        size = len(k.space.levels[cfg])
        out[cfg] = p[i:i + size]
        i += size
    return out


def _stalled(k: Knowledge, open_cells: dict[Config, list[float]], freq: Counter[Cell]) -> list[_Scored]:
    """No single cell moves the decision (only a combination would): take the most needed plan cells."""
    return [_Scored(Cell(*cfg, L), (freq[Cell(*cfg, L)] + 1e-9) / k.space.cost(Cell(*cfg, L)))
            for cfg, levels in open_cells.items() for L in levels]


def _needs_confirming(state: ProfilingState, cell: Cell, want: int, max_runs: int) -> bool:
    if want <= 0:
        return False
    runs = state.knowledge.runs.get(cell, [])
    repeats = [m.repeat for m in runs]
    if cell in state.pending or len(set(repeats)) < len(repeats) or len(runs) >= max_runs:
        return False  # a repeat handed back twice (replay) means no new repeat exists
    verdict = state.knowledge.verdict(cell)
    return verdict in (Verdict.UNMEASURED, Verdict.INDETERMINATE) or (verdict is Verdict.FEASIBLE and len(runs) < want)


def _confirmations(state: ProfilingState, bounds: dict[Config, CapacityBounds], now: Decision, want: int,
                   max_runs: int) -> list[Cell]:
    """Cells up to ``lo`` of the configurations in use that lack a verdict of their own.

    The bounds assume feasibility is monotone in load and infer the levels below a feasible one;
    the oracle counts a capacity only up to the first level that really fails. Confirming the
    levels the recommendation rests on makes the two agree; a failure reopens the gap. Levels
    nearest ``lo`` are likeliest to fail, so they go first across all configurations (cheapest
    first among equals), which finds a failure, and the decision it changes, soonest.
    """
    used = sorted({(w, a.tp) for w, parts in now.conservative.assignments.items() for a in parts if a.replicas > 0})
    ranked = []
    for cfg in used:
        below = [L for L in reversed(state.knowledge.space.levels[cfg]) if L <= bounds[cfg].lo]
        ranked += [(depth, state.knowledge.space.cost(Cell(*cfg, L)), Cell(*cfg, L)) for depth, L in enumerate(below)]
    cells = [c for _, _, c in sorted(ranked, key=lambda r: (r[0], r[1]))]
    return [c for c in cells if _needs_confirming(state, c, want, max_runs)]


def _batch(scored: list[_Scored], n: int, rng: np.random.Generator) -> list[Cell]:
    """The ``n`` best cells, at most one per configuration until every configuration had a turn."""
    keys = rng.random(len(scored))
    ranked = [scored[i] for i in sorted(range(len(scored)), key=lambda i: (-scored[i].score, keys[i]))]
    first, rest, seen = [], [], set()
    for s in ranked:
        (rest if s.cell.config in seen else first).append(s.cell)
        seen.add(s.cell.config)
    return (first + rest)[:n]
