"""Paged KV-cache sizing, the way vLLM sizes it at start-up.

Per GPU: blocks = (gpu_memory_utilization x memory - weights/tp - activation reserve)
/ (block_size x KV bytes per token per GPU). The reserve is vLLM's profiling run: the peak
activations of one ``max_num_batched_tokens`` forward pass, the sampler's logits for
``max_num_seqs`` sequences, and non-torch memory (CUDA graphs, NCCL buffers).
"""

from __future__ import annotations

from dataclasses import dataclass

from fleetsieve.sim.catalog import PRECISIONS, Hardware, ModelArch

NON_TORCH_BYTES = 1.5 * 2**30  # CUDA graphs + NCCL + allocator slack, typical on H100 vLLM logs
ACT_BYTES = 2


@dataclass(frozen=True)
class KVLayout:
    """How much KV cache one replica has."""

    weights_bytes_per_gpu: float
    reserve_bytes_per_gpu: float
    kv_bytes_per_gpu: float
    kv_bytes_per_token_per_gpu: float
    block_size: int
    num_blocks: int

    @property
    def fits(self) -> bool:
        return self.num_blocks > 0

    @property
    def capacity_tokens(self) -> int:
        return self.num_blocks * self.block_size


def weights_bytes_per_gpu(arch: ModelArch, tp: int, precision: str) -> float:
    """GEMM weights at ``precision``; embeddings and LM head stay bf16 (as fp8 checkpoints ship)."""
    gemm = arch.layers * arch.layer_params * PRECISIONS[precision]
    return (gemm + arch.embedding_params * ACT_BYTES) / tp


def activation_reserve_bytes(arch: ModelArch, tp: int, max_num_batched_tokens: int, max_num_seqs: int) -> float:
    """Peak of vLLM's profiling forward pass: the MLP's widest point plus fp32 logits."""
    mlp_peak = max_num_batched_tokens * ACT_BYTES * (2 * arch.hidden + 3 * arch.intermediate / tp)
    logits = 2 * max_num_seqs * arch.vocab / tp * 4
    return mlp_peak + logits + NON_TORCH_BYTES


def kv_layout(arch: ModelArch, gpu: Hardware, tp: int, precision: str, *, gpu_memory_utilization: float = 0.9,
              block_size: int = 16, max_num_batched_tokens: int = 8192, max_num_seqs: int = 256,
              kv_precision: str | None = None) -> KVLayout:
    """The KV capacity of one replica (``num_blocks`` <= 0 means the model does not fit).

    ``precision`` sizes the weights, ``kv_precision`` (default: the same) the cache elements.
    """
    kv_dtype = kv_precision or precision
    weights = weights_bytes_per_gpu(arch, tp, precision)
    reserve = activation_reserve_bytes(arch, tp, max_num_batched_tokens, max_num_seqs)
    kv_bytes = gpu_memory_utilization * gpu.memory_bytes - weights - reserve
    per_token = arch.kv_bytes_per_token(kv_dtype) / tp if tp <= arch.kv_heads else (
        arch.kv_bytes_per_token(kv_dtype) / arch.kv_heads)  # heads replicated beyond kv_heads
    blocks = int(kv_bytes // (per_token * block_size)) if kv_bytes > 0 else 0
    return KVLayout(weights, reserve, kv_bytes, per_token, block_size, blocks)
