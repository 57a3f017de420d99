"""A deliberately plain oracle for the engine: the scheduling rules of ``fleetsieve.sim.engine``'s
docstring, applied to every request on every step, with KV blocks held explicitly.

It keeps none of the engine's shortcuts (steady decoders, running sums, a fast path), so the
property tests can check the real engine step for step against it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass


@dataclass
class Req:
    prompt: int
    target: int
    computed: int = 0
    generated: int = 0
    held: int = 0
    preemptions: int = 0
    first_step: int = -1
    finish_step: int = -1
    last_token_s: float | None = None


class ReferenceEngine:
    def __init__(self, step_model, num_blocks: int, max_num_batched_tokens: int, max_num_seqs: int, block_size: int):
        self.step_model, self.free = step_model, num_blocks
        self.budget, self.max_seqs, self.bs = max_num_batched_tokens, max_num_seqs, block_size
        self.now_s, self.steps = 0.0, 0
        self.reqs: list[Req] = []
        self.waiting: deque[int] = deque()
        self.running: list[int] = []
        self.gaps: list[float] = []
        self.durations: list[float] = []

    def add(self, prompt: int, target: int, now_s: float) -> None:
        if not self.running and not self.waiting:
            self.now_s = max(self.now_s, now_s)
        self.reqs.append(Req(prompt, target))
        self.waiting.append(len(self.reqs) - 1)

    def blocks_for(self, tokens: int) -> int:
        return -(-tokens // self.bs)

    def step(self) -> None:
        grants, preempted = self.schedule_running()
        if not preempted:
            grants += self.admit(self.budget - sum(g for _, g in grants))
        grants = [(i, g) for i, g in grants if g > 0]
        duration = self.step_model.step_s_scalar(*self.features(grants))
        self.now_s += duration
        self.durations.append(duration)
        for i, g in grants:
            self.apply(i, g)
        self.steps += 1

    def schedule_running(self) -> tuple[list[tuple[int, int]], bool]:
        grants, before = [], 0
        for i in self.running:
            r = self.reqs[i]
            need = r.prompt + r.generated - r.computed
            grants.append((i, min(max(self.budget - before, 0), need)))
            before += need
        extra = [max(self.blocks_for(self.reqs[i].computed + g) - self.reqs[i].held, 0) if g else 0 for i, g in grants]
        preempted = False
        while self.running:
            total, over = 0, None
            for k, e in enumerate(extra):
                total += e
                if total > self.free:
                    over = k
                    break
            if over is None:
                break
            victim = self.running.pop()
            grants.pop(), extra.pop()
            r = self.reqs[victim]
            self.free, r.held, r.computed = self.free + r.held, 0, 0
            r.preemptions += 1
            self.waiting.appendleft(victim)
            preempted = True
            if len(self.running) == over:
                break
        for (i, _), e in zip(grants, extra):
            self.reqs[i].held += e
            self.free -= e
        return grants, preempted

    def admit(self, budget: int) -> list[tuple[int, int]]:
        out = []
        while self.waiting and budget > 0 and len(self.running) < self.max_seqs:
            r = self.reqs[self.waiting[0]]
            n = min(r.prompt + r.generated - r.computed, budget)
            blocks = self.blocks_for(r.computed + n) - r.held
            if blocks > self.free:
                break
            i = self.waiting.popleft()
            self.free -= blocks
            r.held += blocks
            self.running.append(i)
            out.append((i, n))
            budget -= n
        return out

    def features(self, grants: list[tuple[int, int]]) -> tuple[float, ...]:
        prefill = decode = pairs = context = sampled = 0.0
        for i, g in grants:
            r = self.reqs[i]
            remaining = r.prompt + r.generated - r.computed
            sampled += g == remaining
            if remaining == 1:
                decode += 1
                context += r.computed + 1
            else:
                prefill += g
                pairs += g * (r.computed + (g + 1) / 2)
        return prefill, decode, pairs, context, sampled, float(len(grants))

    def apply(self, i: int, g: int) -> None:
        r = self.reqs[i]
        r.computed += g
        if r.computed != r.prompt + r.generated:
            return
        r.generated += 1
        if r.generated == 1:
            r.first_step = self.steps
        else:
            self.gaps.append(self.now_s - r.last_token_s)
        r.last_token_s = self.now_s
        if r.generated >= r.target:
            r.finish_step = self.steps
            self.free, r.held = self.free + r.held, 0
            self.running.remove(i)
