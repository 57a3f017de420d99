"""The scheduler of a vLLM-V1-like engine, simulated one iteration at a time.

What it keeps from vLLM V1 (``vllm/v1/core/sched/scheduler.py``, behaviour not code):

* chunked prefill always on: each step has a token budget (``max_num_batched_tokens``) shared by
  running requests first (in admission order), then by waiting requests (FCFS);
* ``max_num_seqs`` caps the running set; a request's KV blocks are allocated incrementally, for
  the tokens it computes this step (paged, ``block_size`` tokens per block);
* when a running request cannot get a block, the newest running request is preempted (its blocks
  freed, its progress dropped: recompute) and put back at the head of the queue; no new request is
  admitted in a step that preempted.

Per-request state lives in numpy arrays; one step costs a few dozen vector operations.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from fleetsieve.errors import InputError
from fleetsieve.sim.kvcache import KVLayout
from fleetsieve.sim.steptime import StepTimeModel


class EngineConfig(BaseModel):
    """vLLM V1 defaults for online serving on H100-class GPUs."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    max_num_batched_tokens: int = Field(default=8192, gt=0)
    max_num_seqs: int = Field(default=256, gt=0)
    gpu_memory_utilization: float = Field(default=0.9, gt=0, le=1)
    block_size: int = Field(default=16, gt=0)
    #: Keep per-step batch features (for calibration) and inter-token gaps (for ITL metrics).
    record_steps: bool = False
    record_itl: bool = True


@dataclass(frozen=True)
class StepOutcome:
    """What one engine iteration did. ``new_tokens`` counts output tokens (first one included)."""

    duration_s: float
    new_tokens: dict[int, int]
    finished: tuple[int, ...]
    preempted: tuple[int, ...]


_INT_FIELDS = ("prompt", "target", "generated", "computed", "held", "preemptions", "arrival_step", "first_step",
               "finish_step")
_FLOAT_FIELDS = ("arrival", "first_token", "last_token", "finish")
STEP_FEATURES = ("prefill_tokens", "decode_seqs", "prefill_pairs", "decode_ctx_tokens", "sampled_seqs", "seqs")


class RequestTable:
    """Per-request state as growable numpy columns, indexed by admission order."""

    def __init__(self, capacity: int = 1024) -> None:
        self.size = 0
        self.ids = np.zeros(capacity, dtype=np.int64)
        for name in _INT_FIELDS:
            setattr(self, name, np.zeros(capacity, dtype=np.int64))
        for name in _FLOAT_FIELDS:
            setattr(self, name, np.full(capacity, np.nan))

    def append(self, request_id: int, prompt: int, target: int, arrival: float) -> int:
        if self.size == len(self.ids):
            self._grow()
        i = self.size
        self.ids[i], self.prompt[i], self.target[i], self.arrival[i] = request_id, prompt, target, arrival
        self.first_step[i] = self.finish_step[i] = -1
        self.size += 1
        return i

    def _grow(self) -> None:
        for name in ("ids",) + _INT_FIELDS + _FLOAT_FIELDS:
            old = getattr(self, name)
            fill = np.nan if name in _FLOAT_FIELDS else 0
            setattr(self, name, np.concatenate([old, np.full(len(old), fill, dtype=old.dtype)]))


class Engine:
    """One replica. Time is simulated: ``now_s`` advances by each step's modelled duration."""

    def __init__(self, step_model: StepTimeModel, layout: KVLayout, config: EngineConfig) -> None:
        if not layout.fits:
            raise InputError("--tp", f"the model does not fit on {step_model.tp} GPU(s): no memory left for KV cache")
        self.step_model, self.layout, self.config = step_model, layout, config
        self.requests = RequestTable()
        self.now_s = 0.0
        self.steps = 0
        self.free_blocks = layout.num_blocks
        self._index: dict[int, int] = {}
        self._waiting: deque[int] = deque()
        self._running = np.zeros(0, dtype=np.int64)
        self._itl: list[tuple[np.ndarray, np.ndarray]] = []
        self._step_log: list[tuple[float, ...]] = []

    @property
    def has_work(self) -> bool:
        return bool(self._running.size or self._waiting)

    @property
    def num_running(self) -> int:
        return int(self._running.size)

    @property
    def num_waiting(self) -> int:
        return len(self._waiting)

    def add_request(self, request_id: int, prompt_tokens: int, output_tokens: int, now_s: float) -> None:
        """Queue a request that arrived at ``now_s`` (an idle engine's clock jumps forward to it)."""
        if request_id in self._index:
            raise InputError("add_request", f"request id {request_id} was already added")
        if prompt_tokens < 1 or output_tokens < 1:
            raise InputError("add_request", f"request {request_id}: prompt and output tokens must be >= 1")
        if not self.has_work:
            self.now_s = max(self.now_s, now_s)
        self._index[request_id] = self.requests.append(request_id, prompt_tokens, output_tokens, now_s)
        self.requests.arrival_step[self._index[request_id]] = self.steps
        self._waiting.append(self._index[request_id])

    def step(self) -> StepOutcome | None:
        """Run one iteration: schedule, time it, advance the clock, emit tokens."""
        if not self.has_work:
            return None
        run, sched, preempted = self._schedule_running()
        if not preempted:
            run, sched = self._admit_waiting(run, sched)
        self._running = run
        active = sched > 0
        scheduled, chunk = run[active], sched[active]
        duration = self._time_step(scheduled, chunk)
        self.now_s += duration
        self.steps += 1
        emitted, finished = self._advance(scheduled, chunk)
        ids = self.requests.ids
        return StepOutcome(duration, dict.fromkeys(ids[emitted].tolist(), 1),
                           tuple(ids[finished].tolist()), tuple(ids[preempted].tolist()))

    def fast_forward(self, until_s: float, max_steps: int = 4096) -> int:
        """Run several pure-decode steps at once, exactly as ``step`` would, and return how many.

        Applies only when nothing waits and every running request is decoding; stops at the first
        finish, at the first step ending at or after ``until_s`` (the next arrival), or when KV
        blocks would run short. Returns 0 (and does nothing) when it does not apply.
        """
        r, run = self.requests, self._running
        if self._waiting or not run.size or self.config.record_steps or run.size > self.config.max_num_batched_tokens:
            return 0
        computed, generated = r.computed[run], r.generated[run]
        if np.any(r.prompt[run] + generated - computed != 1) or np.any(generated == 0):
            return 0
        n = float(run.size)
        ctx0 = float((computed + 1).sum())
        j = np.arange(min(max_steps, int((r.target[run] - generated).min())), dtype=float)
        durations = self.step_model.step_s(0.0, n, 0.0, ctx0 + j * n, n, n)
        ends = self.now_s + np.cumsum(durations)
        k = min(int(np.searchsorted(ends, until_s, side="left")) + 1, j.size)
        extra = np.maximum(-(-(computed + k) // self.config.block_size) - r.held[run], 0)
        if k < 2 or extra.sum() > self.free_blocks:
            return 0
        self._apply_decode_steps(run, durations[:k], extra)
        return k

    def _apply_decode_steps(self, run: np.ndarray, durations: np.ndarray, extra: np.ndarray) -> None:
        r, k = self.requests, durations.size
        r.held[run] += extra
        self.free_blocks -= int(extra.sum())
        if self.config.record_itl:
            first_gap = self.now_s + durations[0] - r.last_token[run]
            gaps = np.concatenate([first_gap, np.repeat(durations[1:], run.size)])
            self._itl.append((np.tile(run, k), gaps))
        self.now_s += float(durations.sum())
        self.steps += k
        r.computed[run] += k
        r.generated[run] += k
        r.last_token[run] = self.now_s
        finished = run[r.generated[run] >= r.target[run]]
        if finished.size:
            r.finish[finished] = self.now_s
            r.finish_step[finished] = self.steps - 1
            self.free_blocks += int(r.held[finished].sum())
            r.held[finished] = 0
            self._running = run[~np.isin(run, finished)]

    # -- scheduling ---------------------------------------------------------------------------

    def _schedule_running(self) -> tuple[np.ndarray, np.ndarray, list[int]]:
        """Give running requests their share of the token budget, preempting when blocks run out."""
        r, run = self.requests, self._running
        need = r.prompt[run] + r.generated[run] - r.computed[run]
        before = np.cumsum(need) - need
        sched = np.clip(self.config.max_num_batched_tokens - before, 0, need)
        bs = self.config.block_size
        extra = np.where(sched > 0, np.maximum(-(-(r.computed[run] + sched) // bs) - r.held[run], 0), 0)
        preempted: list[int] = []
        while run.size:
            over = np.flatnonzero(np.cumsum(extra) > self.free_blocks)
            if not over.size:
                break
            victim = int(run[-1])
            self._preempt(victim)
            preempted.append(victim)
            run, sched, extra = run[:-1], sched[:-1], extra[:-1]
            if run.size == over[0]:
                break  # the request that needed the block was itself the newest: it waits
        r.held[run] += extra
        self.free_blocks -= int(extra.sum())
        return run, sched, preempted

    def _preempt(self, i: int) -> None:
        r = self.requests
        self.free_blocks += int(r.held[i])
        r.held[i] = 0
        r.computed[i] = 0
        r.preemptions[i] += 1
        self._waiting.appendleft(i)

    def _admit_waiting(self, run: np.ndarray, sched: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Admit queued requests in FCFS order while budget, sequence slots and blocks allow."""
        r, cfg = self.requests, self.config
        budget = cfg.max_num_batched_tokens - int(sched.sum())
        slots = cfg.max_num_seqs - run.size
        admitted: list[int] = []
        chunks: list[int] = []
        while self._waiting and budget > 0 and slots > 0:
            i = self._waiting[0]
            n = min(int(r.prompt[i] + r.generated[i] - r.computed[i]), budget)
            blocks = -(-(int(r.computed[i]) + n) // cfg.block_size) - int(r.held[i])
            if blocks > self.free_blocks:
                break
            self._waiting.popleft()
            self.free_blocks -= blocks
            r.held[i] += blocks
            admitted.append(i)
            chunks.append(n)
            budget -= n
            slots -= 1
        if not admitted:
            return run, sched
        return np.concatenate([run, admitted]), np.concatenate([sched, chunks])

    # -- timing and bookkeeping ---------------------------------------------------------------

    def _time_step(self, scheduled: np.ndarray, chunk: np.ndarray) -> float:
        r = self.requests
        computed = r.computed[scheduled]
        remaining = r.prompt[scheduled] + r.generated[scheduled] - computed
        decode = remaining == 1
        prefill_chunk = chunk[~decode]
        features = (
            float(prefill_chunk.sum()), float(decode.sum()),
            float((prefill_chunk * (computed[~decode] + (prefill_chunk + 1) / 2)).sum()),
            float((computed[decode] + 1).sum()), float((chunk == remaining).sum()), float(scheduled.size),
        )
        if self.config.record_steps:
            self._step_log.append(features)
        return self.step_model.step_s_scalar(*features)

    def _advance(self, scheduled: np.ndarray, chunk: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Apply the step: computed tokens, sampled tokens, first tokens, finishes."""
        r, now = self.requests, self.now_s
        r.computed[scheduled] += chunk
        emitted = scheduled[r.computed[scheduled] == r.prompt[scheduled] + r.generated[scheduled]]
        r.generated[emitted] += 1
        is_first = r.generated[emitted] == 1
        first = emitted[is_first & np.isnan(r.first_token[emitted])]
        r.first_token[first] = now
        r.first_step[first] = self.steps - 1
        if self.config.record_itl:
            later = emitted[~is_first]
            self._itl.append((later, now - r.last_token[later]))
        r.last_token[emitted] = now
        finished = emitted[r.generated[emitted] >= r.target[emitted]]
        if finished.size:
            r.finish[finished] = now
            r.finish_step[finished] = self.steps - 1
            self.free_blocks += int(r.held[finished].sum())
            r.held[finished] = 0
            self._running = self._running[~np.isin(self._running, finished)]
        return emitted, finished

    # -- logs for runners and calibration -----------------------------------------------------

    def inter_token_gaps(self) -> tuple[np.ndarray, np.ndarray]:
        """(request index, gap seconds) of every non-first output token so far."""
        if not self._itl:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        return np.concatenate([i for i, _ in self._itl]), np.concatenate([g for _, g in self._itl])

    def step_features(self) -> dict[str, np.ndarray]:
        """Per-step batch features (needs ``record_steps``), for re-timing steps under new parameters."""
        table = np.array(self._step_log, dtype=float).reshape(-1, len(STEP_FEATURES))
        return {name: table[:, k] for k, name in enumerate(STEP_FEATURES)}
