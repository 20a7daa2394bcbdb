"""Model presets (their KV bytes per token and weights from the config) and seeded prompts."""

import random

import pytest

from stack.inference.presets import PRESETS, kv_bytes_per_token, parameter_count, preset_config
from stack.inference.prompts import Lengths, make_prompts, output_lengths


def test_llama_3_8b_holds_128_kib_of_kv_per_token_in_bf16_and_8b_weights():
    config = preset_config("llama-3-8b")
    # 2 (K, V) x 32 layers x 8 KV heads x 128 head_dim x 2 bytes
    assert kv_bytes_per_token(config, "bfloat16") == 2 * 32 * 8 * 128 * 2 == 131072
    assert parameter_count(config) == 8_030_261_248  # Meta-Llama-3-8B's published count


def test_a_layer_override_scales_the_kv_cache_and_keeps_the_shapes():
    config = preset_config("llama-3-70b", layers=4)
    assert config["num_hidden_layers"] == 4 and config["hidden_size"] == 8192
    assert kv_bytes_per_token(config, "float16") == 2 * 4 * 8 * 128 * 2


def test_the_parameter_count_is_what_transformers_builds_for_every_preset():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    for name in PRESETS:
        config = preset_config(name, layers=1)
        with torch.device("meta"):
            model = transformers.AutoModelForCausalLM.from_config(
                transformers.AutoConfig.for_model(**config)
            )
        assert sum(p.numel() for p in model.parameters()) == parameter_count(config), name


def test_no_preset_has_an_end_of_sequence_token_so_every_answer_runs_its_full_length():
    assert all(preset_config(name)["eos_token_id"] is None for name in PRESETS)


def test_the_same_seed_gives_the_same_prompts_and_lengths():
    lengths = Lengths("uniform", 64, low=64, high=1024)
    first = make_prompts(32, lengths, 128256, seed=7)
    assert first == make_prompts(32, lengths, 128256, seed=7)
    assert first != make_prompts(32, lengths, 128256, seed=8)
    assert all(64 <= len(p) <= 1024 for p in first)
    assert all(16 <= t < 128256 for p in first for t in p)


def test_lognormal_lengths_are_right_skewed_around_the_asked_median():
    draws = Lengths("lognormal", 256, low=4, high=4096).draw(4000, random.Random(0))
    draws.sort()
    assert 230 <= draws[2000] <= 280  # the median
    assert sum(draws) / len(draws) > draws[2000]  # a long right tail
    assert min(draws) >= 4 and max(draws) <= 4096


def test_fixed_output_lengths_are_the_asked_length():
    assert output_lengths(5, Lengths("fixed", 64), seed=0) == [64] * 5


def test_a_label_names_the_range_the_lengths_were_drawn_from():
    assert Lengths("uniform", 32).label() == "uniform:1-128"  # 0s mean 1 and 4 x the length
    assert Lengths("uniform", 512, low=64, high=1024).label() == "uniform:64-1024"
    assert Lengths("lognormal", 256, low=4, high=4096).label() == "lognormal:256[4-4096]"
    assert Lengths("fixed", 64, low=9, high=10).label() == "fixed:64"
