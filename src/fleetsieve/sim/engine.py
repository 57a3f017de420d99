"""The scheduler of a vLLM-V1-like engine, simulated one iteration at a time.

What it keeps from vLLM V1 (``vllm/v1/core/sched/scheduler.py``, behaviour not code):

* chunked prefill always on: each step has a token budget (``max_num_batched_tokens``) shared by
  running requests first (in admission order), then by waiting requests (FCFS);
* ``max_num_seqs`` caps the running set; a request's KV blocks are allocated incrementally, for
  the tokens it computes this step (paged, ``block_size`` tokens per block);
* when a running request cannot get a block, the newest running request is preempted (its blocks
  freed, its progress dropped: recompute) and put back at the head of the queue; no new request is
  admitted in a step that preempted.

Requests in steady decode (one token per step) are kept implicitly (``SteadyDecoders``), so a step
costs O(1) for them and O(k) for the k requests that prefill, join, leave or finish in it. Steps
that preempt, or whose token budget starves a decoder, first make every request explicit and then
follow the rules above one request at a time.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from fleetsieve.errors import InputError
from fleetsieve.sim.decoders import LeftDecoder, SteadyDecoders, TokenGaps
from fleetsieve.sim.kvcache import KVLayout
from fleetsieve.sim.request_log import RequestLog, RequestTable
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


STEP_FEATURES = ("prefill_tokens", "decode_seqs", "prefill_pairs", "decode_ctx_tokens", "sampled_seqs", "seqs")
Chunk = tuple[int, int]  # (request index, tokens computed for it this step)


def _blocks(tokens: int, block_size: int) -> int:
    return -(-tokens // block_size)


class Engine:
    """One replica. Time is simulated: ``now_s`` advances by each step's modelled duration.

    Requests are indexed by admission order. A running request is either a steady decoder (held
    in ``_decoders``, counts implicit) or explicit (counts in ``_log``); KV blocks held by a
    running request are always ``ceil(computed / block_size)``.
    """

    def __init__(self, step_model: StepTimeModel, layout: KVLayout, config: EngineConfig) -> None:
        if not layout.fits:
            raise InputError("--tp", f"the model does not fit on {step_model.tp} GPU(s): no memory left for KV cache")
        self.step_model, self.layout, self.config = step_model, layout, config
        self.now_s = 0.0
        self.steps = 0
        self.free_blocks = layout.num_blocks
        self._log = RequestLog()
        self._index: dict[int, int] = {}
        self._waiting: deque[int] = deque()
        self._running: dict[int, None] = {}  # every running request, in admission order
        self._explicit: dict[int, None] = {}  # the running requests that are not steady decoders
        self._decoders = SteadyDecoders(config.block_size)
        self._gaps = TokenGaps() if config.record_itl else None
        self._step_log: list[tuple[float, ...]] = []

    @property
    def has_work(self) -> bool:
        return bool(self._running or self._waiting)

    @property
    def num_running(self) -> int:
        return len(self._running)

    @property
    def num_waiting(self) -> int:
        return len(self._waiting)

    @property
    def requests(self) -> RequestTable:
        """A snapshot of every request so far (built on each access: read it once per use)."""
        table = self._log.table()
        for i in self._decoders:
            table.computed[i], table.generated[i] = self._decoders.counts(i, self.steps)
            table.last_token[i] = self.now_s
        return table

    def add_request(self, request_id: int, prompt_tokens: int, output_tokens: int, now_s: float) -> None:
        """Queue a request that arrived at ``now_s`` (an idle engine's clock jumps forward to it)."""
        if request_id in self._index:
            raise InputError("add_request", f"request id {request_id} was already added")
        if prompt_tokens < 1 or output_tokens < 1:
            raise InputError("add_request", f"request {request_id}: prompt and output tokens must be >= 1")
        if not self.has_work:
            self.now_s = max(self.now_s, now_s)
        index = self._log.append(request_id, int(prompt_tokens), int(output_tokens), float(now_s), self.steps)
        self._index[request_id] = index
        self._waiting.append(index)

    def step(self) -> StepOutcome | None:
        """Run one iteration: schedule, time it, advance the clock, emit tokens."""
        if not self.has_work:
            return None
        duration, emitted, finished, preempted = self._run_step(detail=True)
        ids = self._log.ids
        return StepOutcome(duration, dict.fromkeys([ids[i] for i in emitted], 1), tuple(ids[i] for i in finished),
                           tuple(ids[i] for i in preempted))

    def advance(self) -> int:
        """``step`` without building its outcome: returns how many requests finished (0 when idle)."""
        return len(self._run_step(detail=False)[2]) if self.has_work else 0

    def run_until(self, until_s: float) -> int:
        """Run steps while there is work and the clock is before ``until_s``; returns how many ran."""
        first = self.steps
        while (self._running or self._waiting) and self.now_s < until_s:
            if self._explicit or self._waiting or not self._decode_only_steps(until_s):
                self._run_step(detail=False)
        return self.steps - first

    def _decode_only_steps(self, until_s: float) -> int:
        """Steps in which only steady decoders run and nothing waits, while that lasts (nothing
        can join: the queue is fed from outside). Same outcome as ``_run_step``, whose loops are
        all empty then; this is the simulator's innermost loop, so it skips them."""
        decoders, ends = self._decoders, (self._gaps.step_ends_s if self._gaps is not None else None)
        step, first, budget = self.steps, self.steps, self.config.max_num_batched_tokens
        while (n := len(decoders)) and n <= budget and self.now_s < until_s:
            blocks = decoders.new_blocks(step)
            if blocks > self.free_blocks:
                break  # a decoder would be preempted: the per-request rules decide
            self.free_blocks -= blocks
            context = decoders.context_tokens(step)
            if self.config.record_steps:
                self._step_log.append((0.0, float(n), 0.0, float(context), float(n), float(n)))
            self.now_s += self.step_model.decode_step_s(n, context)
            self.steps = step + 1
            if ends is not None:
                ends.append(self.now_s)
            if decoders.next_last_step() == step:
                self._finish_decoders(step)
            step += 1
        return step - first

    def _run_step(self, detail: bool) -> tuple[float, list[int], list[int], list[int]]:
        """One iteration; returns (duration, emitted, finished, preempted) as request indices
        (``emitted`` only when ``detail``)."""
        step, preempted = self.steps, []
        plan = self._plan_steady(step)
        if plan is None:
            self._make_all_explicit(step)
            plan, preempted = self._plan_explicit()
        chunks, budget = plan
        if not preempted:
            chunks += self._admit(budget)
        emitted = list(self._decoders) if detail else []
        duration = self._time_step(step, chunks)
        self.now_s += duration
        self.steps = step + 1
        if self._gaps is not None:
            self._gaps.step_ends_s.append(self.now_s)
        finished = self._finish_decoders(step)
        emitted += self._advance_explicit(chunks, step, finished)
        return duration, emitted, finished, preempted

    # -- scheduling ---------------------------------------------------------------------------

    def _plan_steady(self, step: int) -> tuple[list[Chunk], int] | None:
        """The common case: every running request gets all the tokens it needs and the blocks for
        them. Returns (chunks of explicit requests, budget left), or None when the budget would
        fall short or blocks would run out (then the one-request-at-a-time rules decide)."""
        log, block_size = self._log, self.config.block_size
        chunks, tokens, blocks = [], len(self._decoders), self._decoders.new_blocks(step)
        for i in self._explicit:
            computed = log.computed[i]
            need = log.prompt[i] + log.generated[i] - computed
            chunks.append((i, need))
            tokens += need
            blocks += _blocks(computed + need, block_size) - _blocks(computed, block_size)
        if tokens > self.config.max_num_batched_tokens or blocks > self.free_blocks:
            return None
        self.free_blocks -= blocks
        return chunks, self.config.max_num_batched_tokens - tokens

    def _make_all_explicit(self, step: int) -> None:
        log = self._log
        for left in self._decoders.leave_all(step):
            self._set_counts(left)
            log.last_token[left.index] = self.now_s
            self._explicit[left.index] = None
            if self._gaps is not None:
                self._gaps.add_span(left.index, left.joined_after_s, left.first_step, step - 1)

    def _plan_explicit(self) -> tuple[tuple[list[Chunk], int], list[int]]:
        """vLLM's rules per request: the budget goes to running requests in admission order; when
        one cannot get a block, the newest running request is preempted (recompute)."""
        log, block_size, budget = self._log, self.config.block_size, self.config.max_num_batched_tokens
        run, grants, blocks, before = list(self._running), [], [], 0
        for i in run:
            need = log.prompt[i] + log.generated[i] - log.computed[i]
            grant = min(max(budget - before, 0), need)
            before += need
            grants.append(grant)
            blocks.append(_blocks(log.computed[i] + grant, block_size) - _blocks(log.computed[i], block_size))
        preempted: list[int] = []
        while run and (over := _first_over(blocks, self.free_blocks)) is not None:
            victim = run.pop()
            grants.pop(), blocks.pop()
            self._preempt(victim)
            preempted.append(victim)
            if len(run) == over:
                break  # the request that needed the block was itself the newest: it waits
        self.free_blocks -= sum(blocks)
        return ([(i, g) for i, g in zip(run, grants) if g > 0], budget - sum(grants)), preempted

    def _preempt(self, i: int) -> None:
        log = self._log
        self.free_blocks += _blocks(log.computed[i], self.config.block_size)
        log.computed[i] = 0
        log.preemptions[i] += 1
        del self._running[i], self._explicit[i]
        self._waiting.appendleft(i)

    def _admit(self, budget: int) -> list[Chunk]:
        """Admit queued requests in FCFS order while budget, sequence slots and blocks allow."""
        log, block_size = self._log, self.config.block_size
        slots = self.config.max_num_seqs - len(self._running)
        chunks: list[Chunk] = []
        while self._waiting and budget > 0 and slots > 0:
            i = self._waiting[0]
            computed = log.computed[i]
            n = min(log.prompt[i] + log.generated[i] - computed, budget)
            blocks = _blocks(computed + n, block_size) - _blocks(computed, block_size)
            if blocks > self.free_blocks:
                break
            self._waiting.popleft()
            self.free_blocks -= blocks
            self._running[i] = self._explicit[i] = None
            chunks.append((i, n))
            budget -= n
            slots -= 1
        return chunks

    # -- timing and bookkeeping ---------------------------------------------------------------

    def _time_step(self, step: int, chunks: list[Chunk]) -> float:
        log, decoders = self._log, len(self._decoders)
        prefill_tokens, decode_seqs, sampled, pairs = 0, decoders, decoders, 0.0
        context = self._decoders.context_tokens(step)
        for i, n in chunks:
            computed = log.computed[i]
            remaining = log.prompt[i] + log.generated[i] - computed
            sampled += n == remaining
            if remaining == 1:
                decode_seqs += 1
                context += computed + 1
            else:
                prefill_tokens += n
                pairs += n * (computed + (n + 1) / 2)
        features = (float(prefill_tokens), float(decode_seqs), pairs, float(context), float(sampled),
                    float(decoders + len(chunks)))
        if self.config.record_steps:
            self._step_log.append(features)
        return self.step_model.step_s_scalar(*features)

    def _finish_decoders(self, step: int) -> list[int]:
        finished = []
        for left in self._decoders.leave_finished(step):
            self._set_counts(left)
            if self._gaps is not None:
                self._gaps.add_span(left.index, left.joined_after_s, left.first_step, step)
            self._finish(left.index, step)
            finished.append(left.index)
        return finished

    def _advance_explicit(self, chunks: list[Chunk], step: int, finished: list[int]) -> list[int]:
        """Apply the step to explicit requests; one that emits either finishes or starts decoding."""
        log, emitted = self._log, []
        for i, n in chunks:
            computed = log.computed[i] + n
            log.computed[i] = computed
            if computed != log.prompt[i] + log.generated[i]:
                continue  # a prefill chunk that did not reach the end of the prompt
            generated = log.generated[i] = log.generated[i] + 1
            emitted.append(i)
            self._record_token(i, generated, step)
            if generated >= log.target[i]:
                self._finish(i, step)
                finished.append(i)
            else:
                del self._explicit[i]
                self._decoders.join(i, computed, generated, log.target[i], step + 1, self.now_s)
        return emitted

    def _record_token(self, i: int, generated: int, step: int) -> None:
        log = self._log
        if generated == 1:
            if math.isnan(log.first_token[i]):
                log.first_token[i], log.first_step[i] = self.now_s, step
        elif self._gaps is not None:
            self._gaps.add(i, self.now_s - log.last_token[i])
        log.last_token[i] = self.now_s

    def _finish(self, i: int, step: int) -> None:
        log = self._log
        log.finish[i] = log.last_token[i] = self.now_s
        log.finish_step[i] = step
        self.free_blocks += _blocks(log.computed[i], self.config.block_size)
        del self._running[i]
        self._explicit.pop(i, None)

    def _set_counts(self, left: LeftDecoder) -> None:
        self._log.computed[left.index], self._log.generated[left.index] = left.computed, left.generated

    # -- logs for runners and calibration -----------------------------------------------------

    def inter_token_gaps(self) -> tuple[np.ndarray, np.ndarray]:
        """(request index, gap seconds) of every non-first output token so far."""
        if self._gaps is None:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        return self._gaps.arrays(self._decoders.open_spans())

    def step_features(self) -> dict[str, np.ndarray]:
        """Per-step batch features (needs ``record_steps``), for re-timing steps under new parameters."""
        table = np.array(self._step_log, dtype=float).reshape(-1, len(STEP_FEATURES))
        return {name: table[:, k] for k, name in enumerate(STEP_FEATURES)}


def _first_over(blocks: list[int], free_blocks: int) -> int | None:
    """Index of the first request whose cumulative block demand exceeds ``free_blocks``."""
    total = 0
    for k, b in enumerate(blocks):
        total += b
        if total > free_blocks:
            return k
    return None
