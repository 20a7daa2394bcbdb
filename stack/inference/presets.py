"""Model architectures by name, built with random weights: no download, no hub.

A serving stack's speed and memory depend on a model's shapes (layers, heads, KV heads,
hidden and MLP sizes, vocabulary, experts), not on its weights' values, so a config-only
model with random weights measures what the real one would. The numbers are the models'
published configs (config.json on their model cards); ``layers`` overrides the depth so
that a 70B-shaped model fits a GPU the whole one does not (the result says so).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}


@dataclass(frozen=True)
class Preset:
    """One architecture: the transformers config it is built from, and what it stands for."""

    name: str
    title: str
    model_type: str
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def layers(self) -> int:
        return int(self.config["num_hidden_layers"])


_LLAMA3_8B = {
    "vocab_size": 128256,
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "max_position_embeddings": 8192,
    "rope_theta": 500000.0,
    "rms_norm_eps": 1e-5,
}

PRESETS: dict[str, Preset] = {
    preset.name: preset
    for preset in (
        Preset("llama-3-8b", "Llama-3-8B (Meta-Llama-3-8B's config)", "llama", _LLAMA3_8B),
        Preset(
            "llama-3-70b",
            "Llama-3-70B (Meta-Llama-3-70B's config)",
            "llama",
            {
                **_LLAMA3_8B,
                "hidden_size": 8192,
                "intermediate_size": 28672,
                "num_hidden_layers": 80,
                "num_attention_heads": 64,
            },
        ),
        Preset(
            "mixtral-8x7b",
            "Mixtral-8x7B (Mixtral-8x7B-v0.1's config)",
            "mixtral",
            {
                "vocab_size": 32000,
                "hidden_size": 4096,
                "intermediate_size": 14336,
                "num_hidden_layers": 32,
                "num_attention_heads": 32,
                "num_key_value_heads": 8,
                "num_local_experts": 8,
                "num_experts_per_tok": 2,
                "max_position_embeddings": 32768,
                "rope_theta": 1e6,
                "rms_norm_eps": 1e-5,
            },
        ),
        Preset(
            "qwen2.5-7b",
            "Qwen2.5-7B (Qwen2.5-7B-Instruct's config)",
            "qwen2",
            {
                "vocab_size": 152064,
                "hidden_size": 3584,
                "intermediate_size": 18944,
                "num_hidden_layers": 28,
                "num_attention_heads": 28,
                "num_key_value_heads": 4,
                "max_position_embeddings": 32768,
                "rope_theta": 1e6,
                "rms_norm_eps": 1e-6,
            },
        ),
        # Llama-shaped and small enough for a CPU test or a smoke run (2 layers, 64 wide).
        Preset(
            "tiny-llama",
            "a 2-layer, 64-wide Llama for CPU smoke runs",
            "llama",
            {
                "vocab_size": 1024,
                "hidden_size": 64,
                "intermediate_size": 128,
                "num_hidden_layers": 2,
                "num_attention_heads": 4,
                "num_key_value_heads": 2,
                "max_position_embeddings": 4096,
            },
        ),
    )
}


def preset_config(name: str, layers: int = 0) -> dict[str, Any]:
    """The preset's config as a dict (``model_type`` included), with ``layers`` if given.

    No token ids are special: a random model's end-of-sequence would stop a request at a
    random length, and every request must produce the output length it asked for.
    """
    preset = PRESETS[name]
    config = {**preset.config, "model_type": preset.model_type}
    if layers:
        config["num_hidden_layers"] = layers
    config.update(
        bos_token_id=None, eos_token_id=None, pad_token_id=None, tie_word_embeddings=False
    )
    return config


def head_dim(config: dict[str, Any]) -> int:
    """Per-head width: the config's own ``head_dim`` where it says, else hidden / heads."""
    explicit = config.get("head_dim")
    if explicit:
        return int(explicit)
    return int(config["hidden_size"]) // int(config["num_attention_heads"])


def kv_bytes_per_token(config: dict[str, Any], dtype: str) -> int:
    """KV-cache bytes one token holds: 2 (K and V) x layers x KV heads x head_dim x bytes.

    The figure vLLM's and every paged cache's sizing follows; a model without
    ``num_key_value_heads`` has one KV head per attention head (no GQA).
    """
    kv_heads = int(config.get("num_key_value_heads") or config["num_attention_heads"])
    layers = int(config["num_hidden_layers"])
    return 2 * layers * kv_heads * head_dim(config) * DTYPE_BYTES[dtype]


def parameter_count(config: dict[str, Any]) -> int:
    """Weights of a Llama/Mistral/Mixtral/Qwen2-shaped decoder, counted from its config.

    Embeddings and LM head (untied), per layer q/k/v/o projections (Qwen2's q/k/v biases),
    the gated MLP (one per expert, plus the router), two RMSNorms; the final norm.
    Used to say how much memory the weights take before any is allocated.
    """
    hidden, vocab = int(config["hidden_size"]), int(config["vocab_size"])
    heads = int(config["num_attention_heads"])
    kv_heads = int(config.get("num_key_value_heads") or heads)
    dim = head_dim(config)
    attn = hidden * heads * dim * 2 + hidden * kv_heads * dim * 2
    if config.get("model_type") == "qwen2":
        attn += heads * dim + 2 * kv_heads * dim
    experts = int(config.get("num_local_experts") or 1)
    mlp = experts * 3 * hidden * int(config["intermediate_size"])
    if experts > 1:
        mlp += hidden * experts
    layer = attn + mlp + 2 * hidden
    return 2 * vocab * hidden + int(config["num_hidden_layers"]) * layer + hidden
