"""Measurement backends: plugins behind the ``Backend`` protocol (see ``base.py``).

``BACKENDS`` is the one place backends are registered: name -> "module:Class". Modules are
imported lazily so that optional dependencies (HTTP clients, the simulator) load only when
used. Ray is an executor, not a backend (see ``fleetsieve.executors``).
"""

from __future__ import annotations

import importlib
from typing import Any, Mapping

from pydantic import ValidationError

from fleetsieve.backends.base import Backend, BackendArgs
from fleetsieve.errors import InputError

BACKENDS: dict[str, str] = {
    "replay": "fleetsieve.backends.replay:ReplayBackend",
    "sim": "fleetsieve.backends.simulated:SimulatedBackend",
    "openai": "fleetsieve.backends.openai:OpenAIBackend",
}


def backend_class(name: str) -> type[Backend]:
    """The class registered under ``name``; InputError when unknown or not importable here."""
    if name not in BACKENDS:
        raise InputError("--backend", f"unknown backend {name!r} (available: {', '.join(sorted(BACKENDS))})")
    module, _, cls = BACKENDS[name].partition(":")
    try:
        return getattr(importlib.import_module(module), cls)
    except (ImportError, AttributeError) as err:
        raise InputError("--backend", f"backend {name!r} is not available in this installation ({err})") from None


def make_backend(name: str, args: Mapping[str, Any] | None = None) -> Backend:
    """Instantiate a registered backend; unknown names list the available ones, bad args say which."""
    cls = backend_class(name)
    try:
        return cls(args)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "args"
        msg = "unknown option" if first["type"] == "extra_forbidden" else first["msg"]
        raise InputError(f"--backend {name}", f"{where}: {msg}") from None


__all__ = ["BACKENDS", "Backend", "BackendArgs", "backend_class", "make_backend"]
