"""Workloads from real traces, and the request streams sampled from them.

A :class:`Workload` is a bag of real (prompt, output) token-count pairs, optionally with the
real arrival timestamps they came with. :meth:`Workload.sample` turns it into a
:class:`RequestStream` for one open-loop run: arrival times from a chosen arrival process,
lengths drawn as whole rows so a prompt keeps its own output length.

Built-in workloads (data in ``fleetsieve/data/traces``, see PROVENANCE.md there):

- ``chat``: Azure LLM inference trace, conversation, 2023 (lengths and timestamps);
- ``code``: Azure LLM inference trace, code completion, 2023 (lengths and timestamps);
- ``summarize``: arxiv summarization lengths (no timestamps);
- ``sharegpt``: ShareGPT conversation lengths (no timestamps).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from importlib import resources
from typing import Callable

import numpy as np

from fleetsieve.errors import InputError

#: Refuse streams larger than this; a typo in rate or duration should not eat all memory.
MAX_REQUESTS = 20_000_000

ARRIVALS = ("poisson", "gamma", "trace")


def _frozen_array(values: object, dtype: type) -> np.ndarray:
    array = np.array(values, dtype=dtype)  # a copy, so the caller's array stays theirs
    array.flags.writeable = False
    return array


@dataclass(frozen=True, eq=False)
class RequestStream:
    """The requests of one open-loop run, in arrival order.

    ``arrival_s`` is seconds from the start of the run (ascending); ``prompt_tokens`` and
    ``output_tokens`` are token counts (>= 1) of the same request at the same index.
    ``duration_s`` is the length of the window the arrivals were drawn in, when known.
    """

    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    workload: str = ""
    duration_s: float | None = None

    def __post_init__(self) -> None:
        arrival = _frozen_array(self.arrival_s, np.float64)
        prompt = _frozen_array(self.prompt_tokens, np.int64)
        output = _frozen_array(self.output_tokens, np.int64)
        where = f"request stream {self.workload!r}"
        if not (arrival.ndim == prompt.ndim == output.ndim == 1):
            raise InputError(where, "arrival_s, prompt_tokens and output_tokens must be 1-D")
        if not (len(arrival) == len(prompt) == len(output)):
            raise InputError(where, "arrival_s, prompt_tokens and output_tokens differ in length")
        if len(arrival) and (not np.all(np.isfinite(arrival)) or arrival[0] < 0):
            raise InputError(where, "arrival times must be finite and >= 0")
        if np.any(np.diff(arrival) < 0):
            raise InputError(where, "arrival times must be ascending")
        if len(prompt) and min(prompt.min(), output.min()) < 1:
            raise InputError(where, "token counts must be >= 1")
        object.__setattr__(self, "arrival_s", arrival)
        object.__setattr__(self, "prompt_tokens", prompt)
        object.__setattr__(self, "output_tokens", output)

    def __len__(self) -> int:
        return len(self.arrival_s)

    def __getitem__(self, index: slice) -> "RequestStream":
        """A sub-stream; arrival times are kept as they are (not shifted to 0)."""
        if not isinstance(index, slice):
            raise TypeError("RequestStream supports slices only, e.g. stream[:100]")
        return RequestStream(
            self.arrival_s[index],
            self.prompt_tokens[index],
            self.output_tokens[index],
            workload=self.workload,
            duration_s=self.duration_s,
        )

    def head(self, n: int) -> "RequestStream":
        """The first ``n`` requests."""
        return self[:n]

    @property
    def mean_rate_rps(self) -> float:
        """Requests per second over the window (or over the span of arrivals when unknown)."""
        window = self.duration_s if self.duration_s else float(self.arrival_s[-1]) if len(self) else 0.0
        return len(self) / window if window > 0 else math.nan


def _check_positive(where: str, name: str, value: float) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise InputError(where, f"{name} must be a number, got {value!r}")
    if not (math.isfinite(value) and value > 0):
        raise InputError(where, f"{name} must be a positive finite number, got {value}")
    return float(value)


def _renewal_arrivals(draw_gaps: Callable[[int], np.ndarray], rate_rps: float, duration_s: float) -> np.ndarray:
    """Arrival times in [0, duration_s) of a renewal process whose gaps come from ``draw_gaps``."""
    chunk = int(rate_rps * duration_s * 1.1) + 64
    parts: list[np.ndarray] = []
    last = 0.0
    while last < duration_s:  # bursty gaps can need more than one chunk
        times = last + np.cumsum(draw_gaps(chunk))
        parts.append(times)
        last = float(times[-1])
    arrivals = np.concatenate(parts)
    return arrivals[: np.searchsorted(arrivals, duration_s, side="left")]


@dataclass(frozen=True, eq=False)
class Workload:
    """Real (prompt, output) token-count pairs, with their arrival timestamps when the trace has them.

    ``timestamps_s`` are seconds from the first request (ascending), one per row, or None.
    """

    name: str
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    timestamps_s: np.ndarray | None = None
    source: str = ""

    def __post_init__(self) -> None:
        where = self.source or f"workload {self.name!r}"
        prompt = _frozen_array(self.prompt_tokens, np.int64)
        output = _frozen_array(self.output_tokens, np.int64)
        if prompt.ndim != 1 or prompt.shape != output.shape or len(prompt) == 0:
            raise InputError(where, "needs at least one row, with one prompt and one output count each")
        if min(prompt.min(), output.min()) < 1:
            raise InputError(where, "token counts must be >= 1")
        object.__setattr__(self, "prompt_tokens", prompt)
        object.__setattr__(self, "output_tokens", output)
        if self.timestamps_s is not None:
            object.__setattr__(self, "timestamps_s", self._checked_timestamps(where))

    def _checked_timestamps(self, where: str) -> np.ndarray:
        stamps = np.asarray(self.timestamps_s, dtype=np.float64)
        if stamps.shape != self.prompt_tokens.shape or not np.all(np.isfinite(stamps)):
            raise InputError(where, "needs one finite timestamp per row")
        if np.any(np.diff(stamps) < 0):
            raise InputError(where, "timestamps must be ascending")
        if len(stamps) < 2 or stamps[-1] == stamps[0]:
            raise InputError(where, "timestamps must span a positive time (at least two distinct values)")
        return _frozen_array(stamps - stamps[0], np.float64)

    def __len__(self) -> int:
        return len(self.prompt_tokens)

    @property
    def has_timestamps(self) -> bool:
        return self.timestamps_s is not None

    def _cycle_gaps(self) -> np.ndarray:
        """Inter-arrival gaps of the trace replayed in a loop; the wrap-around gap is the mean gap."""
        gaps = np.diff(self.timestamps_s)
        return np.append(gaps, gaps.mean())

    @property
    def trace_rate_rps(self) -> float:
        """Mean arrival rate of the trace replayed in a loop, requests/s (NaN without timestamps)."""
        return len(self) / float(self._cycle_gaps().sum()) if self.has_timestamps else math.nan

    @property
    def trace_interarrival_cv(self) -> float:
        """Coefficient of variation of the trace's inter-arrival gaps (NaN without timestamps)."""
        if not self.has_timestamps:
            return math.nan
        gaps = np.diff(self.timestamps_s)
        return float(gaps.std() / gaps.mean())

    def describe(self) -> dict[str, float]:
        """Summary figures: row count, token-count percentiles, trace rate and burstiness."""
        prompt_p50, prompt_p99 = np.percentile(self.prompt_tokens, [50, 99])
        output_p50, output_p99 = np.percentile(self.output_tokens, [50, 99])
        return {
            "rows": float(len(self)),
            "p50_prompt_tokens": float(prompt_p50),
            "p99_prompt_tokens": float(prompt_p99),
            "p50_output_tokens": float(output_p50),
            "p99_output_tokens": float(output_p99),
            "trace_rate_rps": self.trace_rate_rps,
            "trace_interarrival_cv": self.trace_interarrival_cv,
        }

    def sample(
        self,
        *,
        rate_rps: float,
        duration_s: float,
        arrival: str = "poisson",
        cv: float | None = None,
        seed: int = 0,
    ) -> RequestStream:
        """Requests arriving over ``duration_s`` seconds at a mean of ``rate_rps`` requests/s.

        ``arrival``: ``"poisson"`` (exponential gaps); ``"gamma"`` (Gamma gaps with coefficient
        of variation ``cv``, required); ``"trace"`` (this trace's own timestamps, time-scaled so
        the looped trace's mean rate is ``rate_rps``, started at a seed-chosen point and wrapped
        around; rows are replayed in trace order, so lengths stay with their timestamps). For
        poisson and gamma each request's (prompt, output) pair is a row drawn at random.
        The same seed gives the same stream; streams at different rates share their random
        draws (common random numbers), so load levels compare like with like.
        """
        where = f"workload {self.name!r}"
        rate_rps = _check_positive(where, "rate_rps", rate_rps)
        duration_s = _check_positive(where, "duration_s", duration_s)
        self._check_arrival(where, arrival, cv)
        if rate_rps * duration_s > MAX_REQUESTS:
            raise InputError(where, f"rate_rps x duration_s = {rate_rps * duration_s:.3g} requests, over {MAX_REQUESTS}")
        arrival_rng, length_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
        if arrival == "trace":
            arrivals, rows = self._trace_arrivals(arrival_rng, rate_rps, duration_s)
        else:
            arrivals = self._renewal(arrival_rng, arrival, cv, rate_rps, duration_s)
            rows = length_rng.integers(0, len(self), size=len(arrivals))
        return RequestStream(
            arrivals, self.prompt_tokens[rows], self.output_tokens[rows], workload=self.name, duration_s=duration_s
        )

    def _check_arrival(self, where: str, arrival: str, cv: float | None) -> None:
        if arrival not in ARRIVALS:
            raise InputError(where, f"unknown arrival process {arrival!r}; available: {', '.join(ARRIVALS)}")
        if arrival == "gamma":
            if cv is None:
                raise InputError(where, "gamma arrivals need cv (coefficient of variation of the gaps, > 0)")
            _check_positive(where, "cv", cv)
        elif cv is not None:
            raise InputError(where, f"cv applies to gamma arrivals only, not {arrival!r}")
        if arrival == "trace" and not self.has_timestamps:
            raise InputError(where, "has no timestamps, so it cannot drive trace-timed arrivals; use poisson or gamma")

    @staticmethod
    def _renewal(rng: np.random.Generator, arrival: str, cv: float | None, rate_rps: float, duration_s: float) -> np.ndarray:
        if arrival == "poisson":
            return _renewal_arrivals(lambda n: rng.standard_exponential(n) / rate_rps, rate_rps, duration_s)
        shape = 1.0 / float(cv) ** 2  # Gamma(k, theta): CV = 1/sqrt(k), mean = k*theta = 1/rate
        scale = 1.0 / (rate_rps * shape)
        return _renewal_arrivals(lambda n: rng.standard_gamma(shape, n) * scale, rate_rps, duration_s)

    def _trace_arrivals(self, rng: np.random.Generator, rate_rps: float, duration_s: float) -> tuple[np.ndarray, np.ndarray]:
        """Replay the looped trace, time-scaled to ``rate_rps``, from a random point in the loop."""
        stretch = self.trace_rate_rps / rate_rps
        cycle_s = float(self._cycle_gaps().sum()) * stretch
        offsets = self.timestamps_s * stretch  # position of each row within one loop
        start = rng.uniform(0.0, cycle_s)
        loops = int(math.ceil((start + duration_s) / cycle_s))
        times = (np.arange(loops)[:, None] * cycle_s + offsets[None, :]).ravel() - start
        rows = np.tile(np.arange(len(self)), loops)
        first = np.searchsorted(times, 0.0, side="left")
        last = np.searchsorted(times, duration_s, side="left")
        return times[first:last], rows[first:last]


# name -> (packaged file, description); the one place built-in workloads are registered.
_BUILTIN: dict[str, tuple[str, str]] = {
    "chat": ("azure_conv_2023.csv.gz", "Azure LLM inference trace 2023, conversation (lengths + timestamps)"),
    "code": ("azure_code_2023.csv.gz", "Azure LLM inference trace 2023, code completion (lengths + timestamps)"),
    "summarize": ("arxiv_summarization_lengths.csv.gz", "arxiv summarization lengths (no timestamps)"),
    "sharegpt": ("sharegpt_lengths.csv.gz", "ShareGPT conversation lengths (no timestamps)"),
}


def list_workloads() -> list[str]:
    """Names of the built-in workloads."""
    return sorted(_BUILTIN)


def describe_workloads() -> dict[str, str]:
    """Built-in workload name -> one-line description of its source."""
    return {name: _BUILTIN[name][1] for name in list_workloads()}


@functools.lru_cache(maxsize=None)
def get_workload(name: str) -> Workload:
    """The built-in workload ``name`` (see :func:`list_workloads`); loaded once, then cached."""
    if name not in _BUILTIN:
        raise InputError("workload", f"unknown workload {name!r}; available: {', '.join(list_workloads())}")
    from fleetsieve.sim.traces import load_length_trace  # traces builds Workloads, so import late

    data_file = resources.files("fleetsieve") / "data" / "traces" / _BUILTIN[name][0]
    with resources.as_file(data_file) as path:
        loaded = load_length_trace(path)
    return Workload(name, loaded.prompt_tokens, loaded.output_tokens, loaded.timestamps_s, source=loaded.source)
