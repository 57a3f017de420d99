"""Step-time model: the NCCL table, the GEMM part against Vidur's real H100 per-op timings, and
scalar/array agreement."""

import csv
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetsieve.sim import load_catalog, load_fitted_params
from fleetsieve.sim.steptime import StepTimeModel, all_reduce_s

MLP_OPS = Path(__file__).resolve().parents[2] / "src/fleetsieve/data/calibration/vidur_h100_codellama34b_mlp_ops.csv"
GEMM_OPS = ("attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj")


def model(name="Qwen/Qwen3-32B", tp=2, gpu="h100-sxm", precision="bf16"):
    cat = load_catalog()
    return StepTimeModel(cat.model(name), cat.gpu(gpu), tp, precision, load_fitted_params())


def test_all_reduce_is_monotone_and_zero_for_one_gpu():
    sizes = np.geomspace(2048, 2**27, 30)
    times = all_reduce_s(sizes, 8)
    assert np.all(np.diff(times) >= 0) and times[0] > 0
    assert float(all_reduce_s(1e6, 1)) == 0.0


def test_scalar_and_array_paths_agree():
    m = model(tp=4)
    feats = dict(prefill_tokens=3000.0, decode_seqs=50.0, prefill_pairs=2e6, decode_ctx_tokens=80000.0,
                 sampled_seqs=51.0, seqs=52.0)
    assert m.step_s_scalar(*feats.values()) == pytest.approx(float(m.step_s(*feats.values())), rel=1e-9)
    for tokens in (10.0, 1e5, 3e8):  # inside and beyond the NCCL table
        assert m._reduce_scalar(tokens) == pytest.approx(float(all_reduce_s(tokens, 4)), rel=1e-9)


def test_more_work_takes_longer_and_tp_speeds_up_prefill():
    m2, m8 = model(tp=2), model(tp=8)
    assert m2.step_s_scalar(8192, 0, 8192 * 4096, 0, 1, 1) > m2.step_s_scalar(1024, 0, 1024 * 512, 0, 1, 1)
    assert m8.step_s_scalar(8192, 0, 1e7, 0, 1, 1) < m2.step_s_scalar(8192, 0, 1e7, 0, 1, 1)


def _vidur_rows():
    with MLP_OPS.open() as fh:
        for row in csv.DictReader(fh):
            yield int(row["num_tensor_parallel_workers"]), int(row["num_tokens"]), \
                sum(float(row[f"time_stats.{op}.median"]) for op in GEMM_OPS) * 1e-3


def test_gemm_part_matches_vidur_codellama34b_h100_per_op_timings():
    """Our roofline GEMM time vs Vidur's measured projections + MLP (ms), TP 1-8, 1-4096 tokens."""
    errors = []
    for tp, tokens, measured in _vidur_rows():
        ours = float(model("codellama/CodeLlama-34b-Instruct-hf", tp=tp).gemm_s(tokens))
        errors.append(abs(ours / measured - 1))
    errors = np.array(errors)
    assert len(errors) > 100
    assert np.median(errors) < 0.15, np.median(errors)
    assert np.percentile(errors, 90) < 0.45  # the roofline corner (256-512 tokens) is optimistic


def test_kv_precision_changes_only_decode_kv_reads():
    cat = load_catalog()
    arch, gpu, params = cat.model("meta-llama/Llama-3.1-70B"), cat.gpu("h100-sxm"), load_fitted_params()
    fp8_kv = StepTimeModel(arch, gpu, 4, "fp8", params)
    bf16_kv = StepTimeModel(arch, gpu, 4, "fp8", params, kv_precision="bf16")
    prefill_only = (4096.0, 0.0, 4096.0 * 2048, 0.0, 1.0, 1.0)
    assert bf16_kv.step_s_scalar(*prefill_only) == pytest.approx(fp8_kv.step_s_scalar(*prefill_only))
    decode = (0.0, 64.0, 0.0, 64 * 4096.0, 64.0, 64.0)
    kv_read_fp8 = 64 * 4096 * 2 * (arch.kv_heads / 4) * arch.head_dim * 1 / (gpu.hbm_bytes_per_s * params.hbm_eff)
    extra = bf16_kv.step_s_scalar(*decode) - fp8_kv.step_s_scalar(*decode)
    assert extra == pytest.approx(arch.layers * kv_read_fp8, rel=1e-6)


@settings(max_examples=300, deadline=None)
@given(tp=st.sampled_from([1, 2, 4, 8]), seqs=st.integers(1, 512), context=st.integers(1, 4_000_000),
       name=st.sampled_from(["Qwen/Qwen3-32B", "meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-70B"]))
def test_decode_step_is_the_general_formula_bit_for_bit(tp, seqs, context, name):
    m = model(name, tp=tp, precision="fp8" if "70B" in name else "bf16")
    assert m.decode_step_s(seqs, context) == m.step_s_scalar(0.0, float(seqs), 0.0, float(context), float(seqs),
                                                            float(seqs))
    assert m.decode_step_s(seqs, context) == m.decode_step_s(seqs, context)  # the cached terms change nothing
