"""Step-time model: the duration of one engine iteration from its batch.

time = L x [GEMM + prefill attention + decode attention + 2 all-reduces + per-layer fixed]
       + LM head + fixed per-step overhead + per-sequence overhead

GEMMs are a roofline (FLOPs at a fitted fraction of peak vs weight bytes at a fitted fraction of
HBM bandwidth); all-reduce comes from the measured DGX-H100 NCCL table. The few efficiencies are
fitted by ``fleetsieve.sim.calibrate``; the shipped values live in ``data/fitted_steptime.json``.
Every function here works on scalars and on numpy arrays of steps alike.
"""

from __future__ import annotations

import bisect
import csv
import json
from dataclasses import asdict, dataclass, fields
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from fleetsieve.sim.catalog import PRECISIONS, Hardware, ModelArch

_DATA = Path(__file__).resolve().parent.parent / "data"
ALL_REDUCE_CSV = _DATA / "calibration" / "vidur_h100_dgx_all_reduce.csv"
FITTED_JSON = _DATA / "fitted_steptime.json"
ACT_BYTES = 2  # activations, embeddings and LM head stay bf16 in fp8 checkpoints


@dataclass(frozen=True)
class StepTimeParams:
    """The fitted constants. Efficiencies are fractions of the hardware peak."""

    gemm_flops_eff: float = 0.6
    hbm_eff: float = 0.8
    attn_flops_eff: float = 0.4
    layer_overhead_s: float = 10e-6
    step_overhead_s: float = 3e-3
    per_seq_overhead_s: float = 10e-6
    #: Latency outside the engine loop (HTTP, tokenising, detokenising): added to TTFT and e2el
    #: of each request, fixed plus per prompt token; it does not occupy the GPU.
    frontend_s: float = 20e-3
    frontend_per_token_s: float = 10e-6

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    def to_vector(self) -> np.ndarray:
        return np.array([getattr(self, n) for n in self.names()], dtype=float)

    @classmethod
    def from_vector(cls, values: np.ndarray) -> "StepTimeParams":
        return cls(**{n: float(v) for n, v in zip(cls.names(), values)})


def load_fitted_params(path: Path = FITTED_JSON) -> StepTimeParams:
    """The shipped fitted parameters (defaults when the file is absent, e.g. before the first fit)."""
    if not path.exists():
        return StepTimeParams()
    return StepTimeParams(**json.loads(path.read_text())["params"])


def save_fitted_params(params: StepTimeParams, info: dict[str, Any], path: Path = FITTED_JSON) -> None:
    path.write_text(json.dumps({"params": asdict(params), **info}, indent=2, sort_keys=True) + "\n")


@lru_cache(maxsize=1)
def _all_reduce_table() -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """GPUs -> (message bytes, median seconds), median over ranks of the NCCL measurements."""
    samples: dict[tuple[int, int], list[float]] = {}
    with ALL_REDUCE_CSV.open() as fh:
        for row in csv.DictReader(fh):
            key = (int(row["num_workers"]), int(row["size"]))
            samples.setdefault(key, []).append(float(row["time_stats.all_reduce.median"]) * 1e-3)
    table: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for gpus in sorted({g for g, _ in samples}):
        sizes = np.array(sorted(s for g, s in samples if g == gpus), dtype=float)
        times = np.array([np.median(samples[(gpus, int(s))]) for s in sizes])
        table[gpus] = (sizes, np.maximum.accumulate(times))  # monotone in size
    return table


def _nearest_table(gpus: int) -> tuple[np.ndarray, np.ndarray]:
    """The measured curve for ``gpus`` (or the nearest measured GPU count)."""
    table = _all_reduce_table()
    return table[min(table, key=lambda g: (abs(g - gpus), -g))]


def all_reduce_s(message_bytes: Any, gpus: int, scale: float = 1.0) -> Any:
    """Seconds for one NCCL all-reduce, interpolated in the measured table (linear past its end)."""
    if gpus <= 1:
        return np.zeros_like(np.asarray(message_bytes, dtype=float))
    sizes, times = _nearest_table(gpus)
    slope = (times[-1] - times[-2]) / (sizes[-1] - sizes[-2])
    inside = np.interp(message_bytes, sizes, times)
    beyond = times[-1] + slope * (np.asarray(message_bytes, dtype=float) - sizes[-1])
    return scale * np.where(np.asarray(message_bytes) > sizes[-1], beyond, inside)


def _elementwise_bytes_per_token(arch: ModelArch, tp: int) -> float:
    """HBM traffic of one layer's norms, residual adds, rope and activation per token.

    Norms and adds act on the full hidden state on every GPU (not split by TP); the activation
    on the TP shard of the MLP. Pass counts are read off Vidur's H100 per-op timings
    (CodeLlama-34B, TP 1 vs 8): about 8 passes over hidden and 6 over intermediate/tp.
    """
    return ACT_BYTES * (8.0 * arch.hidden + 6.0 * arch.intermediate / tp)


@dataclass(frozen=True)
class StepTimeModel:
    """Step durations for one (model, gpu, tp, precision) under fitted ``params``."""

    arch: ModelArch
    gpu: Hardware
    tp: int
    precision: str
    params: StepTimeParams
    #: KV-cache element type (vLLM's ``--kv-cache-dtype``); None means the same as the weights.
    kv_precision: str | None = None

    @property
    def kv_dtype(self) -> str:
        return self.kv_precision or self.precision

    def gemm_s(self, tokens: Any) -> Any:
        """One layer's GEMMs (qkv, o, MLP) on one GPU for ``tokens`` batched tokens."""
        p, weights = self.params, self.arch.layer_params / self.tp
        compute = 2.0 * np.asarray(tokens, dtype=float) * weights / (self.gpu.flops(self.precision) * p.gemm_flops_eff)
        memory = weights * PRECISIONS[self.precision] / (self.gpu.hbm_bytes_per_s * p.hbm_eff)
        return np.maximum(compute, memory)

    def attention_s(self, prefill_pairs: Any, decode_ctx_tokens: Any) -> Any:
        """One layer's attention: prefill FLOPs over (query, key) pairs, decode KV bytes read."""
        a, p = self.arch, self.params
        q_heads = a.q_heads / self.tp
        kv_heads = max(a.kv_heads / self.tp, 1.0)  # KV heads are replicated when tp > kv_heads
        prefill = 4.0 * np.asarray(prefill_pairs, dtype=float) * q_heads * a.head_dim / (self.gpu.bf16_flops * p.attn_flops_eff)
        kv_bytes = np.asarray(decode_ctx_tokens, dtype=float) * 2 * kv_heads * a.head_dim * PRECISIONS[self.kv_dtype]
        return prefill + kv_bytes / (self.gpu.hbm_bytes_per_s * p.hbm_eff)

    def lm_head_s(self, sampled_seqs: Any) -> Any:
        p, weights = self.params, self.arch.vocab * self.arch.hidden / self.tp
        compute = 2.0 * np.asarray(sampled_seqs, dtype=float) * weights / (self.gpu.bf16_flops * p.gemm_flops_eff)
        return np.maximum(compute, weights * ACT_BYTES / (self.gpu.hbm_bytes_per_s * p.hbm_eff))

    @cached_property
    def _coef(self) -> tuple[float, ...]:
        """Per-step constants: seconds per token, per pair, per context token, fixed terms."""
        a, p, g, tp = self.arch, self.params, self.gpu, self.tp
        weights = a.layer_params / tp
        per_token = 2.0 * weights / (g.flops(self.precision) * p.gemm_flops_eff)
        weight_read = weights * PRECISIONS[self.precision] / (g.hbm_bytes_per_s * p.hbm_eff)
        per_pair = 4.0 * (a.q_heads / tp) * a.head_dim / (g.bf16_flops * p.attn_flops_eff)
        kv_heads = max(a.kv_heads / tp, 1.0)
        per_ctx = 2 * kv_heads * a.head_dim * PRECISIONS[self.kv_dtype] / (g.hbm_bytes_per_s * p.hbm_eff)
        head = a.vocab * a.hidden / tp
        head_token = 2.0 * head / (g.bf16_flops * p.gemm_flops_eff)
        head_read = head * ACT_BYTES / (g.hbm_bytes_per_s * p.hbm_eff)
        per_token += _elementwise_bytes_per_token(a, tp) / (g.hbm_bytes_per_s * p.hbm_eff)
        return (per_token, weight_read, per_pair, per_ctx, head_token, head_read)

    def frontend_latency_s(self, prompt_tokens: Any) -> Any:
        return self.params.frontend_s + self.params.frontend_per_token_s * np.asarray(prompt_tokens, dtype=float)

    def step_s(self, prefill_tokens: Any, decode_seqs: Any, prefill_pairs: Any,
               decode_ctx_tokens: Any, sampled_seqs: Any, seqs: Any) -> Any:
        """Seconds for one iteration, for arrays of steps (see ``step_s_scalar`` for one step)."""
        per_token, weight_read, per_pair, per_ctx, head_token, head_read = self._coef
        tokens = np.asarray(prefill_tokens, dtype=float) + decode_seqs
        reduce_s = all_reduce_s(tokens * self.arch.hidden * ACT_BYTES, self.tp, self.gpu.all_reduce_scale)
        per_layer = (np.maximum(per_token * tokens, weight_read) + per_pair * np.asarray(prefill_pairs, dtype=float)
                     + per_ctx * np.asarray(decode_ctx_tokens, dtype=float) + 2.0 * reduce_s
                     + self.params.layer_overhead_s)
        head = np.maximum(head_token * np.asarray(sampled_seqs, dtype=float), head_read)
        fixed = self.params.step_overhead_s + self.params.per_seq_overhead_s * np.asarray(seqs, dtype=float)
        return self.arch.layers * per_layer + head + fixed

    def step_s_scalar(self, prefill_tokens: float, decode_seqs: float, prefill_pairs: float,
                      decode_ctx_tokens: float, sampled_seqs: float, seqs: float) -> float:
        """The same formula as ``step_s`` in plain floats: the engine calls this once per step."""
        per_token, weight_read, per_pair, per_ctx, head_token, head_read = self._coef
        tokens = prefill_tokens + decode_seqs
        reduce_s = self._reduce_for_tokens(tokens)
        per_layer = (max(per_token * tokens, weight_read) + per_pair * prefill_pairs + per_ctx * decode_ctx_tokens
                     + 2.0 * reduce_s + self.params.layer_overhead_s)
        fixed = self.params.step_overhead_s + self.params.per_seq_overhead_s * seqs
        return self.arch.layers * per_layer + max(head_token * sampled_seqs, head_read) + fixed

    def decode_step_s(self, seqs: int, context_tokens: int) -> float:
        """``step_s_scalar`` of a pure-decode step (``seqs`` decoders attending to
        ``context_tokens`` in all), bit for bit: the same operations in the same order, with the
        terms that depend only on ``seqs`` computed once per batch size."""
        parts = self._decode_parts.get(seqs)
        if parts is None:
            parts = self._decode_parts[seqs] = self._decode_terms(float(seqs))
        per_token_part, reduce_part, head_part, fixed_part = parts
        per_layer = per_token_part + self._coef[3] * context_tokens + reduce_part + self.params.layer_overhead_s
        return self.arch.layers * per_layer + head_part + fixed_part

    def _decode_terms(self, n: float) -> tuple[float, float, float, float]:
        per_token, weight_read, per_pair, _, head_token, head_read = self._coef
        reduce_s = self._reduce_for_tokens(n)
        return (max(per_token * n, weight_read) + per_pair * 0.0, 2.0 * reduce_s, max(head_token * n, head_read),
                self.params.step_overhead_s + self.params.per_seq_overhead_s * n)

    @cached_property
    def _decode_parts(self) -> dict[int, tuple[float, float, float, float]]:
        return {}

    def _reduce_for_tokens(self, tokens: float) -> float:
        """One all-reduce of ``tokens`` hidden states; a step's token count repeats across steps,
        so each count is interpolated once."""
        reduce_s = self._reduce_by_tokens.get(tokens)
        if reduce_s is None:
            reduce_s = self._reduce_by_tokens[tokens] = self._reduce_scalar(tokens * self.arch.hidden * ACT_BYTES)
        return reduce_s

    def _reduce_scalar(self, message_bytes: float) -> float:
        if self.tp <= 1:
            return 0.0
        sizes, times, slope = self._reduce_curve
        if message_bytes >= sizes[-1]:
            return self.gpu.all_reduce_scale * (times[-1] + slope * (message_bytes - sizes[-1]))
        i = max(bisect.bisect_right(sizes, message_bytes), 1)
        frac = max(message_bytes - sizes[i - 1], 0.0) / (sizes[i] - sizes[i - 1])
        return self.gpu.all_reduce_scale * (times[i - 1] + frac * (times[i] - times[i - 1]))

    @cached_property
    def _reduce_by_tokens(self) -> dict[float, float]:
        return {}

    @cached_property
    def _reduce_curve(self) -> tuple[list[float], list[float], float]:
        sizes, times = _nearest_table(self.tp)
        return sizes.tolist(), times.tolist(), float((times[-1] - times[-2]) / (sizes[-1] - sizes[-2]))
