"""The live backend "openai": measure a cell with real HTTP traffic against an
OpenAI-compatible server (vLLM, SGLang, serve-sim), optionally launching the engine itself.

One ``measure`` call = up to ``1 + max_retries`` runs. A run that failed for a reason worth
retrying (connection refused, 5xx, stream cut, timeout) is retried after a pause; a 4xx is
the client's fault and is not. Every attempt's GPU-seconds are added up. Statuses:

* ``OK``: the window's requests completed (failures at most ``max_failed_fraction``);
* ``ABORTED_INFEASIBLE``: the early-abort rule stopped the run (see ``abort.py``);
* ``FAILED``: anything else, with the reason.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Literal, Mapping

import numpy as np
from pydantic import Field

from fleetsieve.backends.base import Backend, BackendArgs
from fleetsieve.backends.openai.abort import AbortRule, slo_horizon_s
from fleetsieve.backends.openai.launcher import EngineLauncher, LaunchArgs
from fleetsieve.backends.openai.loadgen import ClientOptions, RequestPlan, RunOutcome, run_load
from fleetsieve.backends.openai.timing import make_window, summarize
from fleetsieve.errors import InputError
from fleetsieve.records import Cell, Measurement, Status
from fleetsieve.spec import FleetSpec


class OpenAIArgs(BackendArgs):
    """Options of the live backend (times in seconds of the served model's clock)."""

    endpoint: str = Field(default="http://127.0.0.1:8000", description="server base URL (ignored when launching)")
    model: str = Field(description="model name sent in requests")
    api: Literal["completions", "chat"] = "completions"
    duration_s: float = Field(default=60.0, gt=0, description="how long arrivals are sent")
    warmup_s: float = Field(default=5.0, ge=0)
    cooldown_s: float = Field(default=5.0, ge=0)
    arrival: Literal["poisson", "gamma", "trace"] = "poisson"
    cv: float | None = Field(default=None, gt=0, description="gap CV for gamma arrivals")
    fixed_lengths: tuple[int, int] | None = Field(default=None, description="(prompt, output) tokens for every request instead of the workload's")
    request_timeout_s: float = Field(default=300.0, gt=0)
    max_failed_fraction: float = Field(default=0.01, ge=0, le=1)
    max_failed_requests: int = Field(default=20, ge=0, description="circuit breaker: stop the run after this many failures")
    max_retries: int = Field(default=1, ge=0, le=5)
    retry_backoff_s: float = Field(default=2.0, ge=0)
    early_abort: bool = True
    abort_alpha: float = Field(default=0.05, gt=0, lt=1)
    check_interval_s: float = Field(default=1.0, gt=0)
    time_scale: float = Field(default=1.0, gt=0, description="wall s per model s (serve-sim --time-scale)")
    force_output_length: bool = True
    launch: LaunchArgs | None = None


def derive_seed(seed: int, repeat: int) -> int:
    return int(np.random.SeedSequence([seed, repeat]).generate_state(1)[0])


def _retryable(reason: str | None) -> bool:
    return not (reason or "").startswith("HTTP 4") and "HTTP 4" not in (reason or "")


class OpenAIBackend(Backend):
    """Live measurements over HTTP; see the module docstring."""

    name = "openai"
    Args = OpenAIArgs

    def __init__(self, args: OpenAIArgs | Mapping | None = None) -> None:
        super().__init__(args)
        self.launcher = EngineLauncher(self.args.launch, self.args.model) if self.args.launch else None

    @property
    def startup_gpu_seconds(self) -> float:
        """GPU-seconds spent starting engines (not part of any measurement)."""
        return self.launcher.startup_gpu_seconds if self.launcher else 0.0

    def validate(self, spec: FleetSpec) -> None:
        if self.args.fixed_lengths is None:
            for name in spec.workloads:
                self._workload(name)

    def _workload(self, name: str):
        from fleetsieve.sim.workloads import get_workload

        return get_workload(name)

    def plan(self, cell: Cell, seed: int) -> RequestPlan:
        """The requests one run sends (exact token lengths, arrivals at ``cell.load_rps``)."""
        a = self.args
        if a.fixed_lengths is not None:
            rng = np.random.default_rng(seed)
            n = max(1, int(rng.poisson(cell.load_rps * a.duration_s)))
            arrivals = np.sort(rng.uniform(0.0, a.duration_s, n))
            return RequestPlan(arrivals, np.full(n, a.fixed_lengths[0]), np.full(n, a.fixed_lengths[1]), a.duration_s)
        stream = self._workload(cell.workload).sample(rate_rps=cell.load_rps, duration_s=a.duration_s,
                                                      arrival=a.arrival, cv=a.cv, seed=seed)
        return RequestPlan(stream.arrival_s, stream.prompt_tokens, stream.output_tokens, a.duration_s)

    def expected_gpu_seconds(self, cell: Cell) -> float | None:
        return cell.tp * self.args.duration_s

    def measure(self, cell: Cell, *, seed: int = 0, repeat: int = 0,
                slo: Mapping[str, float] | None = None) -> Measurement:
        startup_gpu, endpoint = 0.0, self.args.endpoint
        if self.launcher is not None:
            report = self.launcher.ensure(cell.tp)
            startup_gpu, endpoint = report.gpu_seconds, self.launcher.url
            if report.error:
                return Measurement(cell, Status.FAILED, repeat=repeat, reason=f"engine start failed: {report.error}",
                                   extra={"startup_gpu_seconds": startup_gpu, "engine_log": report.log_path})
        try:
            plan = self.plan(cell, derive_seed(seed, repeat))
        except InputError as err:
            return Measurement(cell, Status.FAILED, repeat=repeat, reason=f"bad workload: {err}")
        result = self._measure_with_retries(cell, plan, endpoint, seed, repeat, slo)
        return dataclasses.replace(result, extra={**result.extra, "startup_gpu_seconds": startup_gpu})

    def _measure_with_retries(self, cell: Cell, plan: RequestPlan, endpoint: str, seed: int, repeat: int,
                              slo: Mapping[str, float] | None) -> Measurement:
        spent, attempt = 0.0, 0
        while True:
            attempt += 1
            outcome = self.run_once(cell, plan, endpoint, derive_seed(seed, repeat), slo)
            result = self.to_measurement(cell, plan, outcome, repeat)
            spent += result.gpu_seconds
            if result.status is not Status.FAILED or attempt > self.args.max_retries or not _retryable(result.reason):
                break
            time.sleep(self.args.retry_backoff_s)
        return dataclasses.replace(result, gpu_seconds=spent, extra={**result.extra, "attempts": attempt})

    def run_once(self, cell: Cell, plan: RequestPlan, endpoint: str, seed: int,
                 slo: Mapping[str, float] | None) -> RunOutcome:
        """One run of ``plan`` (no retries), with the abort rule watching when there is an SLO."""
        a = self.args
        options = ClientOptions(endpoint, a.model, a.api, a.request_timeout_s, max_failed_requests=a.max_failed_requests,
                                force_output_length=a.force_output_length, time_scale=a.time_scale, seed=seed)
        watcher = None
        if a.early_abort and slo:
            window = make_window(a.duration_s, a.warmup_s, a.cooldown_s)
            looks = math.ceil((a.duration_s + a.request_timeout_s) / a.check_interval_s)
            watcher = AbortRule(dict(slo), window, cell.load_rps, looks, a.abort_alpha,
                                horizon_s=slo_horizon_s(slo, a.request_timeout_s))
        return run_load(plan, options, watcher=watcher, check_interval_s=a.check_interval_s)

    def to_measurement(self, cell: Cell, plan: RequestPlan, outcome: RunOutcome, repeat: int) -> Measurement:
        """Classify a run (OK / ABORTED_INFEASIBLE / FAILED) and attach its metrics."""
        window = make_window(self.args.duration_s, self.args.warmup_s, self.args.cooldown_s)
        metrics = summarize(outcome.records, window)
        completed, failed = int(metrics.pop("completed")), int(metrics.pop("failed"))
        status, reason = self._classify(outcome, completed, failed)
        sent = sum(1 for r in outcome.records if window.holds(r.scheduled_s))
        return Measurement(
            cell, status, metrics if completed else {}, gpu_seconds=cell.tp * outcome.model_s,
            duration_s=outcome.model_s, repeat=repeat, num_requests=sent, completed=completed, reason=reason,
            extra={"wall_s": round(outcome.wall_s, 3), "planned_requests": len(plan)})

    def _classify(self, outcome: RunOutcome, completed: int, failed: int) -> tuple[Status, str | None]:
        if outcome.stopped_by == "watcher":
            return Status.ABORTED_INFEASIBLE, outcome.stop_reason
        if outcome.stopped_by == "failures":
            return Status.FAILED, outcome.stop_reason
        if completed == 0:
            return Status.FAILED, outcome.most_common_error() or "no request completed in the measurement window"
        if failed > self.args.max_failed_fraction * (completed + failed):
            return Status.FAILED, f"{failed} of {completed + failed} requests failed; most common: {outcome.most_common_error()}"
        return Status.OK, None

    def shutdown(self) -> None:
        if self.launcher is not None:
            self.launcher.stop()
