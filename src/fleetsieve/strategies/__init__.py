"""Profiling strategies: plugins behind the ``Strategy`` protocol (see ``base.py``).

``STRATEGIES`` is the one place strategies are registered: name -> "module:Class".
"""

from __future__ import annotations

import importlib
from typing import Any, Mapping

from fleetsieve.errors import InputError
from fleetsieve.strategies.base import ProfilingState, Strategy, StrategyArgs

STRATEGIES: dict[str, str] = {
    "sieve": "fleetsieve.strategies.sieve:Sieve",
    "random": "fleetsieve.strategies.baselines:RandomOrder",
    "exhaustive": "fleetsieve.strategies.baselines:Exhaustive",
    "bisection": "fleetsieve.strategies.bisection:Bisection",
    "capacity-only": "fleetsieve.strategies.bisection:CapacityOnly",
}


def make_strategy(name: str, args: Mapping[str, Any] | None = None) -> Strategy:
    """Instantiate a registered strategy; unknown names list the available ones."""
    if name not in STRATEGIES:
        raise InputError("--strategy", f"unknown strategy {name!r} (available: {', '.join(sorted(STRATEGIES))})")
    module, _, cls = STRATEGIES[name].partition(":")
    return getattr(importlib.import_module(module), cls)(args)


def capacity_only_capacities(spec, space, measurements):  # noqa: ANN001, ANN201 - re-export, typed at the source
    """Saturation capacity per configuration; see ``fleetsieve.strategies.bisection``."""
    from fleetsieve.strategies.bisection import capacity_only_capacities as impl

    return impl(spec, space, measurements)


__all__ = ["STRATEGIES", "ProfilingState", "Strategy", "StrategyArgs", "capacity_only_capacities", "make_strategy"]
