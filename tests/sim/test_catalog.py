"""Catalogs: built-in entries, aliases, user TOML extension, clear errors."""

import pytest

from fleetsieve.errors import InputError
from fleetsieve.sim import load_catalog

REQUIRED = ["Qwen/Qwen3-8B", "Qwen/Qwen3-14B", "Qwen/Qwen3-32B", "meta-llama/Llama-3.1-8B",
            "meta-llama/Llama-3.1-70B", "mistralai/Mistral-Small-24B", "google/gemma-3-27b"]


@pytest.mark.parametrize("name", REQUIRED)
def test_required_models_present(name):
    assert load_catalog().model(name).layers > 0


@pytest.mark.parametrize("name,billions", [("Qwen/Qwen3-32B", 32.8), ("meta-llama/Llama-3.1-8B", 8.0),
                                           ("meta-llama/Llama-3.1-70B", 70.6), ("Qwen/Qwen3-8B", 8.2)])
def test_parameter_counts_match_published_sizes(name, billions):
    assert load_catalog().model(name).total_params / 1e9 == pytest.approx(billions, rel=0.02)


def test_hardware_and_aliases():
    cat = load_catalog()
    assert cat.gpu("h100_sxm") is cat.gpu("h100-sxm")
    assert cat.gpu("h200-sxm").memory_bytes > cat.gpu("a100-sxm").memory_bytes
    assert cat.model("nvidia/Llama-3.1-8B-Instruct-FP8") is cat.model("meta-llama/Llama-3.1-8B")


def test_user_catalog_extends(tmp_path):
    f = tmp_path / "mine.toml"
    f.write_text('[models."me/tiny"]\nlayers = 2\nhidden = 256\nq_heads = 4\nkv_heads = 2\nhead_dim = 64\n'
                 'intermediate = 512\nvocab = 1000\n[hardware.l4]\nbf16_flops = 121e12\nfp8_flops = 242e12\n'
                 'hbm_bytes_per_s = 300e9\nmemory_bytes = 24e9\nnvlink_bytes_per_s = 64e9\n')
    cat = load_catalog(str(f))
    assert cat.model("me/tiny").layers == 2 and cat.gpu("l4").memory_bytes == 24e9
    assert cat.model("Qwen/Qwen3-32B").layers == 64


def test_user_catalog_errors(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[models."x/y"]\nlayers = 2\n')
    with pytest.raises(InputError, match="hidden"):
        load_catalog(str(bad))
    with pytest.raises(InputError, match="file not found"):
        load_catalog(str(tmp_path / "missing.toml"))
    with pytest.raises(InputError, match="unknown model"):
        load_catalog().model("nope/nope")
