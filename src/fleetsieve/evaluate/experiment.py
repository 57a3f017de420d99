"""Reveal-order experiments: every strategy replays every order, in parallel over cores.

Order ``i`` of an experiment with seed ``s`` has its own seed (from ``SeedSequence([s, i])``);
it drives the strategy's random choices and which repeat each reveal returns. Each task is a
pure function of (truth, strategy, order), so results do not depend on the number of workers.
"""

from __future__ import annotations

import functools
import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np

from fleetsieve.evaluate.metrics import OrderOutcome, outcome_of
from fleetsieve.evaluate.replay import Trace, replay
from fleetsieve.evaluate.truth import Truth
from fleetsieve.knowledge import VerdictRule, all_repeats_rule
from fleetsieve.strategies import make_strategy
from fleetsieve.strategies.base import Strategy

StrategyFactory = Callable[[], Strategy]
#: Orders whose full traces are kept (for the gap-vs-GPU-s plot).
KEPT_TRACES = 3


def order_seed(seed: int, order: int) -> int:
    """The seed of one reveal order: independent streams per order, stable across runs."""
    return int(np.random.SeedSequence([seed, order]).generate_state(1)[0])


def registered_factories(names: Sequence[str]) -> dict[str, StrategyFactory]:
    """Factories for registered strategies (unknown names raise InputError now, not in a worker)."""
    for name in names:
        make_strategy(name)
    return {name: functools.partial(make_strategy, name) for name in names}


@dataclass(frozen=True)
class Experiment:
    """Outcomes per strategy (one per order, in order) and the traces of the first few orders."""

    truth: Truth
    seed: int
    orders: int
    outcomes: Mapping[str, tuple[OrderOutcome, ...]]
    traces: Mapping[str, tuple[Trace, ...]]

    @property
    def strategies(self) -> list[str]:
        return list(self.outcomes)

    def costs(self, strategy: str, kind: str = "cost_to_oracle_gpu_s") -> np.ndarray:
        return np.array([getattr(o, kind) for o in self.outcomes[strategy]], dtype=float)


_WORKER: dict[str, object] = {}


def _init_worker(truth: Truth, factories: Mapping[str, StrategyFactory], rule: VerdictRule, seed: int) -> None:
    _WORKER.update(truth=truth, factories=factories, rule=rule, seed=seed)


def _run_order(order: int) -> list[tuple[OrderOutcome, Trace | None]]:
    truth, factories = _WORKER["truth"], _WORKER["factories"]
    seed_i = order_seed(_WORKER["seed"], order)  # type: ignore[arg-type]
    results = []
    for name, factory in factories.items():  # type: ignore[union-attr]
        trace = replay(factory(), truth, order, seed_i, _WORKER["rule"], name)  # type: ignore[arg-type]
        results.append((outcome_of(trace), trace if order < KEPT_TRACES else None))
    return results


def _collect(results: dict[int, list[tuple[OrderOutcome, Trace | None]]], truth: Truth, seed: int, names: Sequence[str]) -> Experiment:
    outcomes = {n: tuple(results[o][k][0] for o in sorted(results)) for k, n in enumerate(names)}
    traces = {n: tuple(t for o in sorted(results) if (t := results[o][k][1]) is not None) for k, n in enumerate(names)}
    return Experiment(truth, seed, len(results), outcomes, traces)


def run_experiment(truth: Truth, factories: Mapping[str, StrategyFactory], orders: int, seed: int,
                   rule: VerdictRule = all_repeats_rule, workers: int | None = None,
                   on_order_done: Callable[[], None] | None = None) -> Experiment:
    """Replay ``orders`` reveal orders for every strategy; ``workers=1`` runs in this process."""
    workers = workers or os.cpu_count() or 1
    tick = on_order_done or (lambda: None)
    results: dict[int, list[tuple[OrderOutcome, Trace | None]]] = {}
    if workers == 1:
        _init_worker(truth, factories, rule, seed)
        for order in range(orders):
            results[order] = _run_order(order)
            tick()
        return _collect(results, truth, seed, list(factories))
    with ProcessPoolExecutor(workers, initializer=_init_worker, initargs=(truth, dict(factories), rule, seed)) as pool:
        futures = {pool.submit(_run_order, order): order for order in range(orders)}
        for future in as_completed(futures):
            results[futures[future]] = future.result()
            tick()
    return _collect(results, truth, seed, list(factories))
