"""Measurement backends: plugins behind the ``Backend`` protocol (see ``base.py``).

``BACKENDS`` is the one place backends are registered: name -> "module:Class". Modules are
imported lazily so that optional dependencies (Ray, HTTP clients) load only when used.
"""

from __future__ import annotations

import importlib
from typing import Any, Mapping

from fleetsieve.backends.base import Backend, BackendArgs
from fleetsieve.errors import InputError

BACKENDS: dict[str, str] = {}


def make_backend(name: str, args: Mapping[str, Any] | None = None) -> Backend:
    """Instantiate a registered backend; unknown names list the available ones."""
    if name not in BACKENDS:
        raise InputError("--backend", f"unknown backend {name!r} (available: {', '.join(sorted(BACKENDS))})")
    module, _, cls = BACKENDS[name].partition(":")
    return getattr(importlib.import_module(module), cls)(args)


__all__ = ["BACKENDS", "Backend", "BackendArgs", "make_backend"]
