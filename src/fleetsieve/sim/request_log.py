"""Per-request state of one engine: plain Python lists while it runs, numpy columns when read.

The engine touches a handful of requests per step, one scalar at a time, which Python lists do
faster than numpy arrays; metrics and calibration then read whole columns, as ``RequestTable``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

_INT_COLUMNS = ("ids", "prompt", "target", "computed", "generated", "preemptions", "arrival_step", "first_step",
                "finish_step")
_TIME_COLUMNS = ("arrival", "first_token", "last_token", "finish")


@dataclass(frozen=True)
class RequestTable:
    """A snapshot of every request the engine has seen, indexed by admission order.

    Token counts and step numbers are ints (-1 for a step that has not happened); times are
    seconds on the engine clock (NaN for an event that has not happened).
    """

    ids: np.ndarray
    prompt: np.ndarray
    target: np.ndarray
    computed: np.ndarray
    generated: np.ndarray
    preemptions: np.ndarray
    arrival_step: np.ndarray
    first_step: np.ndarray
    finish_step: np.ndarray
    arrival: np.ndarray
    first_token: np.ndarray
    last_token: np.ndarray
    finish: np.ndarray

    @property
    def size(self) -> int:
        return int(self.ids.size)


class RequestLog:
    """Growable per-request columns; ``computed``/``generated`` of steady decoders lag (see Engine)."""

    def __init__(self) -> None:
        for name in _INT_COLUMNS + _TIME_COLUMNS:
            setattr(self, name, [])

    def append(self, request_id: int, prompt: int, target: int, arrival_s: float, arrival_step: int) -> int:
        index = len(self.ids)
        for name, value in (("ids", request_id), ("prompt", prompt), ("target", target), ("computed", 0),
                            ("generated", 0), ("preemptions", 0), ("arrival_step", arrival_step),
                            ("first_step", -1), ("finish_step", -1), ("arrival", arrival_s)):
            getattr(self, name).append(value)
        for name in ("first_token", "last_token", "finish"):
            getattr(self, name).append(math.nan)
        return index

    def table(self) -> RequestTable:
        ints = {name: np.asarray(getattr(self, name), dtype=np.int64) for name in _INT_COLUMNS}
        times = {name: np.asarray(getattr(self, name), dtype=float) for name in _TIME_COLUMNS}
        return RequestTable(**ints, **times)
