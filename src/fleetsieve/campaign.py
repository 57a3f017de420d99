"""A profiling campaign: ask / tell is the core API, and ``run`` is a thin loop over it.

``ask(n)`` hands out ``n`` proposals the strategy finds jointly decision-critical (every cell in
flight is passed to it as ``pending``, so it never proposes the same cell twice at once).
``tell`` records a measurement. Both go through a ``Store`` as they happen, so a campaign on a
durable store survives a crash: on resume, measurements already told are kept, and proposals
that were in flight are handed out again first (same cell, repeat and seed).

Stopping rule: ``ask`` returns ``[]`` once the strategy has nothing left to propose. A strategy
that ignores the certificate (``stops_on_its_own`` false: random, exhaustive) would never stop
early, so for it the campaign also stops once the decision gap is within the spec's tolerance
(``certified``). ``sieve`` stops on its own: after the certificate it confirms the levels its
recommendation rests on, then returns ``[]``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping, Protocol, Sequence

from fleetsieve.backends.base import Backend
from fleetsieve.errors import InputError
from fleetsieve.executors import Executor, LocalExecutor
from fleetsieve.knowledge import CellSpace, Knowledge, VerdictRule, all_repeats_rule
from fleetsieve.records import Cell, Decision, Measurement, Status
from fleetsieve.spec import FleetSpec
from fleetsieve.store.base import CampaignSetup, Proposal, Store, space_from_dict
from fleetsieve.strategies import ProfilingState, Strategy, make_strategy
from fleetsieve.strategies._common import DEFAULT_MAX_RUNS_PER_CELL


@dataclass(frozen=True)
class CampaignStatus:
    """Where a campaign stands: what it spent, what it measured, and the decision so far."""

    measurements: int
    gpu_seconds: float
    in_flight: int
    decision: Decision
    mixed: bool = False

    def to_json(self) -> dict[str, Any]:
        """The public result shape of ``fleetsieve run --json``."""
        gap = self.decision.gap
        return {
            "allocation": self.decision.conservative.to_json(self.mixed),
            "gpu_seconds": self.gpu_seconds,
            "measurements": self.measurements,
            "gap": {"fulfilment": gap.fulfilment, "served_rps": gap.served_rps},
            "certified": self.decision.certified,
            "optimistic": {"min_fulfilment": self.decision.optimistic.min_fulfilment,
                           "served_rps": self.decision.optimistic.served_rps},
        }


class ProgressSink(Protocol):
    """Anything that wants to hear how a running campaign stands (e.g. ``report.LiveProgress``)."""

    def update(self, status: CampaignStatus) -> None: ...


def describe_differences(old: Any, new: Any, where: str = "") -> list[str]:
    """Human-readable differences between two JSON-like values (``spec.gpu_budget: 16 -> 8``)."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        out: list[str] = []
        for key in sorted(set(old) | set(new), key=str):
            path = f"{where}.{key}" if where else str(key)
            if key not in new:
                out.append(f"{path} removed")
            elif key not in old:
                out.append(f"{path} added")
            else:
                out += describe_differences(old[key], new[key], path)
        return out
    if isinstance(old, Sequence) and isinstance(new, Sequence) and not isinstance(old, str):
        old, new = list(old), list(new)
    return [] if old == new else [f"{where}: {_short(old)} -> {_short(new)}"]


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _with_full_args(setup: CampaignSetup, strategy: Strategy) -> CampaignSetup:
    """The setup with the strategy's args spelled out (defaults included), so equal choices compare equal."""
    try:
        full = type(strategy).Args.model_validate(dict(setup.strategy_args)).model_dump(mode="json")
    except ValueError as err:
        raise InputError(f"strategy {setup.strategy}", f"args {dict(setup.strategy_args)} are not valid ({err})") from None
    return dataclasses.replace(setup, strategy_args=full)


#: The setup's ``verdicts`` names one of these.
VERDICTS = ("plain", "noise-aware")


def verdict_rule_for(setup: CampaignSetup) -> VerdictRule:
    """The verdict rule a campaign's setup names (noise-aware: settles a cell after 3 runs)."""
    if setup.verdicts == "plain":
        return all_repeats_rule
    if setup.verdicts == "noise-aware":
        from fleetsieve.noise import noise_aware_rule_for_repeats  # scipy.special: only when used

        return noise_aware_rule_for_repeats(DEFAULT_MAX_RUNS_PER_CELL)
    raise InputError("verdicts", f"unknown verdict rule {setup.verdicts!r} (choose from {', '.join(VERDICTS)})")


class Campaign:
    """Ask/tell over a store. Build with ``Campaign.open`` (start or resume) or the constructor."""

    def __init__(self, store: Store, setup: CampaignSetup, strategy: Strategy | None = None, *,
                 reissue_pending: bool = True, stop_when_certified: bool = True, max_failures_per_cell: int = 3) -> None:
        self.store, self.setup = store, setup
        self.spec = FleetSpec.model_validate(dict(setup.spec))
        self.space: CellSpace = space_from_dict(setup.space)
        self._strategy = strategy
        self.reissue_pending, self.stop_when_certified = reissue_pending, stop_when_certified
        self.max_failures_per_cell = max_failures_per_cell
        self._proposals = {p.id: p for p in store.proposals()}
        self._told = dict(store.results())
        self._issued: set[str] = set()
        self._decision: tuple[int, Decision] | None = None

    @classmethod
    def open(cls, store: Store, setup: CampaignSetup, strategy: Strategy | None = None, *,
             resume: bool = False, **options: Any) -> "Campaign":
        """Start a campaign on an empty store, or resume the stored one (refused when it differs)."""
        strategy = strategy or make_strategy(setup.strategy, dict(setup.strategy_args))
        setup = _with_full_args(setup, strategy)
        stored = store.load_setup()
        if stored is None:
            store.save_setup(setup)
            return cls(store, setup, strategy, **options)
        if not resume:
            raise InputError(store.url, "already holds a campaign; pass --resume to continue it")
        differences = describe_differences(_with_full_args(stored, strategy).to_dict(), setup.to_dict())
        if differences:
            raise InputError(store.url, "the campaign was started with a different setup; refusing to resume ("
                             + "; ".join(differences[:5]) + (" ..." if len(differences) > 5 else "") + ")")
        return cls(store, stored, strategy, **options)

    @classmethod
    def load(cls, store: Store, strategy: Strategy | None = None, **options: Any) -> "Campaign":
        """The campaign already in ``store`` (for ``ask``, ``tell`` and ``report``)."""
        setup = store.load_setup()
        if setup is None:
            raise InputError(store.url, "holds no campaign (start one with `fleetsieve run`)")
        return cls(store, setup, strategy, **options)

    @property
    def strategy(self) -> Strategy:
        """The strategy, built from the stored name and args on first use (reports never need it)."""
        if self._strategy is None:
            self._strategy = make_strategy(self.setup.strategy, dict(self.setup.strategy_args))
        return self._strategy

    # State.

    def pending(self) -> list[Proposal]:
        """Proposals whose measurement has not been told, oldest first."""
        return [p for pid, p in self._proposals.items() if pid not in self._told]

    def measurements(self) -> list[Measurement]:
        return list(self._told.values())

    def knowledge(self) -> Knowledge:
        return Knowledge(self.spec, self.space, self.measurements(), verdict_rule_for(self.setup))

    def decision(self) -> Decision:
        if self._decision is None or self._decision[0] != len(self._told):
            self._decision = (len(self._told), self.knowledge().decision())
        return self._decision[1]

    def status(self) -> CampaignStatus:
        spent = sum(m.gpu_seconds for m in self._told.values())
        return CampaignStatus(len(self._told), spent, len(self.pending()), self.decision(), self.spec.mixed)

    def done(self) -> bool:
        """True once the stopping rule holds and nothing is in flight (asks the strategy)."""
        return not self.pending() and (self._should_stop() or not self._next_cells(1))

    def _should_stop(self) -> bool:
        return self.stop_when_certified and not self.strategy.stops_on_its_own and self.decision().certified

    # Ask / tell.

    def ask(self, n: int = 1) -> list[Proposal]:
        """Up to ``n`` proposals: in-flight ones lost in a crash first, then new decision-critical cells."""
        if n < 1:
            raise InputError("ask", f"n must be at least 1, got {n}")
        out = [p for p in self.pending() if p.id not in self._issued][:n] if self.reissue_pending else []
        if len(out) < n and not self._should_stop():
            out += [self._propose(cell) for cell in self._next_cells(n - len(out))]
        self._issued.update(p.id for p in out)
        return out

    def given_up(self) -> set[Cell]:
        """Cells that failed ``max_failures_per_cell`` times without one usable run: never asked again."""
        failed: dict[Cell, int] = {}
        usable: set[Cell] = set()
        for m in self._told.values():
            if m.status is Status.FAILED:
                failed[m.cell] = failed.get(m.cell, 0) + 1
            else:
                usable.add(m.cell)
        return {c for c, k in failed.items() if k >= self.max_failures_per_cell and c not in usable}

    def _next_cells(self, n: int) -> list[Cell]:
        in_flight = frozenset(p.cell for p in self.pending())
        # Cells given up on are shown to the strategy as busy, so a broken cell cannot loop forever.
        busy = in_flight | self.given_up()
        cells = self.strategy.propose(ProfilingState(self.knowledge(), busy, self.setup.seed), n)
        known = set(self.space.cells())
        for cell in cells:
            if cell not in known or cell in busy:
                raise ValueError(f"strategy {type(self.strategy).__name__} broke its contract: proposed {cell} "
                                 "(not in the space, or already in flight)")
        return list(dict.fromkeys(cells))[:n]

    def _propose(self, cell: Cell) -> Proposal:
        index = len(self._proposals)
        repeat = sum(1 for p in self._proposals.values() if p.cell == cell)
        proposal = Proposal(f"p{index:05d}", index, cell, repeat, self.setup.seed)
        self.store.add_proposal(proposal)  # durable before anyone measures it
        self._proposals[proposal.id] = proposal
        return proposal

    def tell(self, proposal: Proposal | str, measurement: Measurement) -> None:
        """Record the measurement of one proposal (once; a second tell is an InputError)."""
        pid = proposal if isinstance(proposal, str) else proposal.id
        known = self._proposals.get(pid)
        if known is None:
            raise InputError("tell", f"unknown proposal {pid!r}")
        if pid in self._told:
            raise InputError("tell", f"proposal {pid!r} already has a measurement")
        if measurement.cell != known.cell:
            raise InputError("tell", f"measurement is of {measurement.cell}, but proposal {pid!r} is {known.cell}")
        measurement = dataclasses.replace(measurement, repeat=known.repeat)
        self.store.add_result(pid, measurement)
        self._told[pid] = measurement

    # The loop.

    def run(self, backend: Backend, executor: Executor | None = None, parallel: int = 1,
            progress: ProgressSink | None = None) -> CampaignStatus:
        """Measure until the stopping rule holds, keeping ``parallel`` measurements in flight."""
        if parallel < 1:
            raise InputError("--parallel", f"must be at least 1, got {parallel}")
        executor = executor or LocalExecutor()
        backend.startup()
        try:
            backend.validate(self.spec)
            executor.start(backend, parallel)
            try:
                self._loop(executor, parallel, progress)
            finally:
                executor.shutdown()
        finally:
            backend.shutdown()
        return self.status()

    def _loop(self, executor: Executor, parallel: int, progress: ProgressSink | None) -> None:
        if progress is not None:
            progress.update(self.status())
        while True:
            free = parallel - executor.in_flight
            for proposal in self.ask(free) if free > 0 else []:
                executor.submit(proposal, dict(self.spec.workloads[proposal.cell.workload].slo))
            if executor.in_flight == 0:
                return
            for proposal, measurement in executor.wait():
                self.tell(proposal, measurement)
                if progress is not None:
                    progress.update(self.status())


