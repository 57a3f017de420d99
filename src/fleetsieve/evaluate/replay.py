"""The reveal loop: a strategy asks for cells one at a time and the grid answers.

Each reveal costs the revealed run's ``gpu_seconds``. A cell with repeats answers with one of
them, in an order fixed by the order's seed; asking for the same cell again reveals the next
repeat (cycling once all were shown). After every reveal we record the recommendation's TRUE
objective on the full grid, the decision gap and whether it is certified.
"""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass
from typing import Mapping

from fleetsieve.evaluate.slo import violates_slo
from fleetsieve.evaluate.truth import Truth, same_objective
from fleetsieve.knowledge import Knowledge, VerdictRule, all_repeats_rule, decide
from fleetsieve.records import Cell, Decision, Measurement
from fleetsieve.strategies.base import ProfilingState, Strategy


@dataclass(frozen=True)
class Step:
    """The campaign after one more reveal (step 0: nothing revealed). ``gpu_s`` is cumulative."""

    gpu_s: float
    cell: Cell | None
    true_fulfilment: float
    true_served_rps: float
    is_oracle: bool
    gap_fulfilment: float
    gap_served_rps: float
    certified: bool


@dataclass(frozen=True)
class Trace:
    """One strategy's replay of one reveal order.

    ``stop_index`` is where a campaign would have stopped: where the strategy returned no cell
    (or the replay was capped); for a strategy that ignores the certificate
    (``stops_on_its_own`` false), the first certified step when that comes first.
    ``final_is_oracle`` and ``slo_violation`` judge the decision taken there. ``stopped_by_strategy`` is true when the strategy returned no cell;
    ``capped`` when the replay hit its step limit instead.
    """

    strategy: str
    order: int
    steps: tuple[Step, ...]
    stop_index: int
    final_is_oracle: bool
    slo_violation: bool
    stopped_by_strategy: bool
    capped: bool


def cell_seed(order_seed: int, cell: Cell) -> int:
    """A stable per-(order, cell) seed (``hash`` of a str changes between processes)."""
    return zlib.crc32(f"{order_seed}|{cell.workload}|{cell.tp}|{cell.load_rps!r}".encode())


class Revealer:
    """Answers reveals from the grid, choosing repeats in a seeded order per cell."""

    def __init__(self, truth: Truth, order_seed: int) -> None:
        self.truth, self.order_seed = truth, order_seed
        self.shown: dict[Cell, int] = {}

    def reveal(self, cell: Cell) -> Measurement:
        runs = self.truth.grid.runs(cell)
        if cell.load_rps not in self.truth.space.levels.get(cell.config, ()) or not runs:
            raise ValueError(f"strategy proposed {cell}, which is not in the cell space")
        order = list(range(len(runs)))
        random.Random(cell_seed(self.order_seed, cell)).shuffle(order)
        k = self.shown.get(cell, 0)
        self.shown[cell] = k + 1
        return runs[order[k % len(runs)]]


def _step(truth: Truth, decision: Decision, gpu_s: float, cell: Cell | None) -> Step:
    objective = truth.true_objective(decision.conservative.assignments)
    return Step(gpu_s, cell, objective.min_fulfilment, objective.served_rps, truth.is_oracle(objective),
                decision.gap.fulfilment, decision.gap.served_rps, decision.certified)


def _settled(truth: Truth, decision: Decision, may_exit_early: bool) -> bool:
    # Under a monotone noise-free truth the proven bounds only tighten, so once the guaranteed
    # objective equals the oracle's and the gap is certified nothing later can change either.
    return may_exit_early and decision.certified and same_objective(decision.conservative.objective, truth.oracle.objective)


def step_limit(truth: Truth) -> int:
    """Reveals allowed before a replay is cut off: four times every run of every cell."""
    return 4 * sum(len(truth.grid.runs(c)) for c in truth.space.cells())


class _Judge:
    """Remembers the decision where the campaign stops (see ``Trace.stop_index``)."""

    def __init__(self, truth: Truth, stop_at_certificate: bool) -> None:
        self.truth, self.index, self.oracle, self.violation = truth, -1, False, False
        self.stop_at_certificate = stop_at_certificate

    def note(self, index: int, decision: Decision, lo: Mapping, final: bool) -> None:
        if self.index >= 0 or not ((decision.certified and self.stop_at_certificate) or final):
            return
        self.index = index
        self.oracle = self.truth.is_oracle(self.truth.true_objective(decision.conservative.assignments))
        self.violation = violates_slo(self.truth, decision.conservative, lo)


def replay(strategy: Strategy, truth: Truth, order: int, order_seed: int,
           verdict_rule: VerdictRule = all_repeats_rule, name: str | None = None) -> Trace:
    """Run ``strategy`` against the grid in ``truth`` until it stops, is settled, or hits the limit."""
    revealer, judge = Revealer(truth, order_seed), _Judge(truth, not strategy.stops_on_its_own)
    may_exit_early = verdict_rule is all_repeats_rule and truth.max_repeats == 1 and truth.monotone()
    measurements: list[Measurement] = []
    steps: list[Step] = []
    gpu_s, cell, stopped, limit = 0.0, None, False, step_limit(truth)
    while True:
        knowledge = Knowledge(truth.spec, truth.space, measurements, verdict_rule)
        bounds = knowledge.bounds()
        decision = decide(truth.spec, bounds)
        steps.append(_step(truth, decision, gpu_s, cell))
        lo = {cfg: b.lo for cfg, b in bounds.items()}
        judge.note(len(steps) - 1, decision, lo, final=False)
        if _settled(truth, decision, may_exit_early) or len(steps) > limit:
            break
        proposal = strategy.propose(ProfilingState(knowledge, frozenset(), order_seed), 1)
        if not proposal:
            stopped = True
            break
        cell = proposal[0]
        measurements.append(revealer.reveal(cell))
        gpu_s += measurements[-1].gpu_seconds
    judge.note(len(steps) - 1, decision, lo, final=True)
    return Trace(name or getattr(strategy, "name", type(strategy).__name__), order, tuple(steps), judge.index,
                 judge.oracle, judge.violation, stopped, len(steps) > limit)
