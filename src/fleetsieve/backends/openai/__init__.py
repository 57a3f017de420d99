"""The live backend: an open-loop streaming load generator against OpenAI-compatible servers.

``OpenAIBackend`` (plugin name ``"openai"``) measures cells over real HTTP; ``run_load`` is
the load generator underneath; ``EngineLauncher`` starts vLLM/SGLang per TP degree;
``AbortRule`` stops clearly infeasible runs early. See docs/live.md.
"""

from fleetsieve.backends.openai.abort import AbortRule, exceedance_p_value, parse_quantile_slo
from fleetsieve.backends.openai.backend import OpenAIArgs, OpenAIBackend
from fleetsieve.backends.openai.launcher import EngineLauncher, LaunchArgs, LaunchReport, engine_command
from fleetsieve.backends.openai.loadgen import ClientOptions, RequestPlan, RunOutcome, run_load, run_load_async
from fleetsieve.backends.openai.timing import RequestRecord, Window, make_window, summarize

__all__ = [
    "AbortRule", "ClientOptions", "EngineLauncher", "LaunchArgs", "LaunchReport", "OpenAIArgs", "OpenAIBackend",
    "RequestPlan", "RequestRecord", "RunOutcome", "Window", "engine_command", "exceedance_p_value",
    "make_window", "parse_quantile_slo", "run_load", "run_load_async", "summarize",
]
