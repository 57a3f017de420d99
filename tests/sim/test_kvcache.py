"""KV-cache sizing from memory, weights and activation reserve."""

from fleetsieve.sim import load_catalog
from fleetsieve.sim.kvcache import kv_layout


def layout(model, gpu, tp, precision="bf16"):
    cat = load_catalog()
    return kv_layout(cat.model(model), cat.gpu(gpu), tp, precision)


def test_qwen3_32b_weights_and_capacity_grow_with_tp():
    caps = [layout("Qwen/Qwen3-32B", "h100-sxm", tp).capacity_tokens for tp in (1, 2, 4, 8)]
    assert caps == sorted(caps) and caps[0] > 0
    # 32.8 B params in bf16 are ~65.5 GB: half per GPU at TP2
    assert 32e9 < layout("Qwen/Qwen3-32B", "h100-sxm", 2).weights_bytes_per_gpu < 33.5e9


def test_tp2_cannot_hold_128_requests_of_4096_plus_128_tokens_but_tp4_can():
    need = 128 * (4096 + 128)
    assert layout("Qwen/Qwen3-32B", "h100-sxm", 2).capacity_tokens < need
    assert layout("Qwen/Qwen3-32B", "h100-sxm", 4).capacity_tokens > need


def test_fp8_and_bigger_memory_give_more_kv():
    base = layout("Qwen/Qwen3-32B", "h100-sxm", 2).capacity_tokens
    assert layout("Qwen/Qwen3-32B", "h100-sxm", 2, "fp8").capacity_tokens > base
    assert layout("Qwen/Qwen3-32B", "h200-sxm", 2).capacity_tokens > base


def test_70b_does_not_fit_on_one_h100():
    assert not layout("meta-llama/Llama-3.1-70B", "h100-sxm", 1).fits
    assert layout("meta-llama/Llama-3.1-70B", "h100-sxm", 1, "fp8").fits


def test_kv_precision_sizes_the_cache_apart_from_the_weights():
    cat = load_catalog()
    arch, gpu = cat.model("meta-llama/Llama-3.1-70B"), cat.gpu("h100-sxm")
    fp8_kv = kv_layout(arch, gpu, 2, "fp8")
    bf16_kv = kv_layout(arch, gpu, 2, "fp8", kv_precision="bf16")
    assert bf16_kv.weights_bytes_per_gpu == fp8_kv.weights_bytes_per_gpu
    assert bf16_kv.kv_bytes_per_token_per_gpu == 2 * fp8_kv.kv_bytes_per_token_per_gpu
    assert abs(bf16_kv.capacity_tokens * 2 - fp8_kv.capacity_tokens) <= 2 * bf16_kv.block_size
