"""serve-sim: an OpenAI-compatible streaming server whose token timing comes from the simulator.

Names are imported on first use (PEP 562), so importing ``fleetsieve.serve_sim.cli`` for the
command line does not load aiohttp.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "BadRequest": "app", "create_app": "app", "is_fast_mode": "app", "parse_request": "app",
    "EngineDriver": "engines", "FixedStepEngine": "engines", "make_token_source": "engines",
    "DEFAULT_HOST": "server", "READY_PREFIX": "server", "ServerThread": "server",
    "serve_until_signalled": "server", "serve_workers": "server",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
