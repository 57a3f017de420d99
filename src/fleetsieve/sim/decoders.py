"""Bookkeeping that lets one engine step cost O(1) for requests in steady decode.

Most running requests, most of the time, emit exactly one token per step: their computed and
generated counts both grow by one each step. ``SteadyDecoders`` stores such a request as two
offsets from the step counter, so a step touches none of them; the batch features a step needs
(count, summed context, new KV blocks) come from running sums. ``TokenGaps`` keeps inter-token
gaps of those requests as step spans, expanded to per-token gaps only when metrics ask.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class LeftDecoder:
    """A request leaving steady decode, with its counts made explicit again."""

    index: int
    computed: int
    generated: int
    #: Clock at its last token before it joined, and the first step it decoded in.
    joined_after_s: float
    first_step: int


class SteadyDecoders:
    """Running requests whose next step computes one token and emits it.

    At step ``s`` a member's computed count is ``offset + s``; it needs a new KV block exactly when
    that count is a multiple of ``block_size``, so members are also counted by ``offset mod
    block_size``. Members leave when they finish (a heap by last step) or all at once when the
    engine needs every request explicit (preemption, a starved token budget).
    """

    def __init__(self, block_size: int) -> None:
        self.block_size = block_size
        self._computed_offset: dict[int, int] = {}
        self._generated_offset: dict[int, int] = {}
        self._joined: dict[int, tuple[float, int]] = {}
        self._offset_sum = 0
        self._by_phase = [0] * block_size
        self._last_steps: list[tuple[int, int]] = []

    def __len__(self) -> int:
        return len(self._computed_offset)

    def __iter__(self):
        return iter(self._computed_offset)

    def join(self, index: int, computed: int, generated: int, target: int, step: int, now_s: float) -> None:
        """Add a request that will decode from ``step`` (the next step to run) on."""
        offset = computed - step
        self._computed_offset[index] = offset
        self._generated_offset[index] = generated - step
        self._joined[index] = (now_s, step)
        self._offset_sum += offset
        self._by_phase[offset % self.block_size] += 1
        heapq.heappush(self._last_steps, (step + target - generated - 1, index))

    def new_blocks(self, step: int) -> int:
        """KV blocks the members need to run ``step``."""
        return self._by_phase[-step % self.block_size]

    def context_tokens(self, step: int) -> int:
        """Sum over members of the context each attends to at ``step`` (computed + 1)."""
        return self._offset_sum + len(self) * (step + 1)

    def counts(self, index: int, step: int) -> tuple[int, int]:
        """(computed, generated) of a member before ``step`` runs."""
        return self._computed_offset[index] + step, self._generated_offset[index] + step

    def next_last_step(self) -> int:
        """The earliest step that gives a member its last token (-1 when there are none)."""
        return self._last_steps[0][0] if self._last_steps else -1

    def leave_finished(self, step: int) -> list[LeftDecoder]:
        """Members whose last token came out of ``step`` (which has just run)."""
        out = []
        while self._last_steps and self._last_steps[0][0] == step:
            out.append(self._leave(heapq.heappop(self._last_steps)[1], step + 1))
        return out

    def leave_all(self, step: int) -> list[LeftDecoder]:
        """Every member, before ``step`` runs, in join order."""
        self._last_steps.clear()
        return [self._leave(index, step) for index in list(self._computed_offset)]

    def open_spans(self) -> list[tuple[int, float, int]]:
        """(index, clock at its last token before it joined, first step it decoded in) per member."""
        return [(index, *self._joined[index]) for index in self._computed_offset]

    def _leave(self, index: int, step: int) -> LeftDecoder:
        offset = self._computed_offset.pop(index)
        self._offset_sum -= offset
        self._by_phase[offset % self.block_size] -= 1
        joined_after_s, first_step = self._joined.pop(index)
        return LeftDecoder(index, offset + step, self._generated_offset.pop(index) + step, joined_after_s, first_step)


class TokenGaps:
    """Inter-token gaps (seconds): single gaps, plus step spans of steady decoders.

    A steady decoder emits at every step of its span, so its gaps are the differences of the
    clock readings at the ends of those steps (``step_ends_s``), the first measured from its
    previous token.
    """

    def __init__(self) -> None:
        self.step_ends_s: list[float] = []
        self._single: tuple[list[int], list[float]] = ([], [])
        self._spans: tuple[list[int], list[float], list[int], list[int]] = ([], [], [], [])

    def add(self, index: int, gap_s: float) -> None:
        self._single[0].append(index)
        self._single[1].append(gap_s)

    def add_span(self, index: int, previous_token_s: float, first_step: int, last_step: int) -> None:
        _append_span(self._spans, index, previous_token_s, first_step, last_step)

    def arrays(self, open_spans: list[tuple[int, float, int]] = ()) -> tuple[np.ndarray, np.ndarray]:
        """(request index, gap seconds) of every recorded gap, plus those of ``open_spans``
        ((index, previous token clock, first step) of decoders still running at the last step)."""
        last_step = len(self.step_ends_s) - 1
        spans = tuple(list(c) for c in self._spans)
        for index, previous_s, first in open_spans:
            _append_span(spans, index, previous_s, first, last_step)
        index, previous, first, last = (np.asarray(c, dtype=t) for c, t in zip(spans, (np.int64, float, np.int64, np.int64)))
        lengths = last - first + 1
        starts = np.cumsum(lengths) - lengths
        steps = np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(starts - first, lengths)
        ends = np.asarray(self.step_ends_s, dtype=float)
        before = ends[np.maximum(steps - 1, 0)]
        before[starts] = previous  # every span is non-empty, so each start is a real position
        return (np.concatenate([np.asarray(self._single[0], dtype=np.int64), np.repeat(index, lengths)]),
                np.concatenate([np.asarray(self._single[1], dtype=float), ends[steps] - before]))


def _append_span(columns: tuple[list, ...], index: int, previous_token_s: float, first_step: int,
                 last_step: int) -> None:
    """Add a span to the (index, previous token clock, first step, last step) columns; empty spans
    (a decoder that left before its first step ran) are skipped."""
    if last_step >= first_step:
        for column, value in zip(columns, (index, previous_token_s, first_step, last_step)):
            column.append(value)
