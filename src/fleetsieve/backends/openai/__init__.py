"""The live backend: an open-loop streaming load generator against OpenAI-compatible servers.

``OpenAIBackend`` (plugin name ``"openai"``) measures cells over real HTTP; ``run_load`` is
the load generator underneath; ``EngineLauncher`` starts vLLM/SGLang per TP degree;
``AbortRule`` stops clearly infeasible runs early. See docs/live.md.

Names are imported on first use (PEP 562), so the ``measure`` command's registration does
not load the backend for ``fleetsieve --help``.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "AbortRule": "abort", "exceedance_p_value": "abort", "parse_quantile_slo": "abort",
    "OpenAIArgs": "backend", "OpenAIBackend": "backend",
    "EngineLauncher": "launcher", "LaunchArgs": "launcher", "LaunchReport": "launcher", "engine_command": "launcher",
    "ClientOptions": "loadgen", "RequestPlan": "loadgen", "RunOutcome": "loadgen", "run_load": "loadgen",
    "run_load_async": "loadgen",
    "RequestRecord": "timing", "Window": "timing", "make_window": "timing", "summarize": "timing",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
