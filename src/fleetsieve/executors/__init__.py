"""Executors: plugins that carry out a campaign's measurements (see ``base.py``).

``EXECUTORS`` is the one place executors are registered: name -> "module:Class". Ray is
imported only when the ``ray`` executor is used.
"""

from __future__ import annotations

import importlib
from typing import Any, Mapping

from fleetsieve.errors import InputError
from fleetsieve.executors.base import Executor, ExecutorArgs, Finished
from fleetsieve.executors.local import LocalExecutor, SimulatedClockExecutor

EXECUTORS: dict[str, str] = {
    "local": "fleetsieve.executors.local:LocalExecutor",
    "simulated": "fleetsieve.executors.local:SimulatedClockExecutor",
    "ray": "fleetsieve.executors.ray:RayExecutor",
}


def make_executor(name: str, args: Mapping[str, Any] | None = None) -> Executor:
    """Instantiate a registered executor; unknown names list the available ones."""
    if name not in EXECUTORS:
        raise InputError("--executor", f"unknown executor {name!r} (available: {', '.join(sorted(EXECUTORS))})")
    module, _, cls = EXECUTORS[name].partition(":")
    return getattr(importlib.import_module(module), cls)(args)


__all__ = ["EXECUTORS", "Executor", "ExecutorArgs", "Finished", "LocalExecutor", "SimulatedClockExecutor", "make_executor"]
