"""The model a job serves: a preset with random weights, or a registered folder.

A preset is built from its config alone (presets.py). For an HTTP server, which loads a
model from a folder, the preset is written as one: its config, a word-level tokenizer
whose token ``t<id>`` is id ``<id>`` (so a prompt of ids is text of exactly that many
tokens, with no tokenizer download), and a checkpoint holding one small tensor:
transformers initialises every weight the checkpoint lacks at random, as ``from_config``
does, so nothing of the model's size is written to disk.

A registered model is a folder on the worker (registry.py); it is loaded from there
with ``local_files_only``: nothing is fetched.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stack.inference.presets import preset_config


@dataclass(frozen=True)
class ModelSpec:
    """What a job serves: ``preset`` (with ``layers``, 0 = its own) or ``path`` (a
    registered folder), named ``name`` in the results."""

    name: str
    preset: str | None = None
    layers: int = 0
    path: Path | None = None

    @property
    def random_weights(self) -> bool:
        return self.preset is not None

    def config(self) -> dict[str, Any]:
        """The model's config as a dict (a preset's, or the folder's config.json)."""
        if self.preset is not None:
            return preset_config(self.preset, self.layers)
        import json

        assert self.path is not None
        config = json.loads((self.path / "config.json").read_text())
        return config.get("text_config") or config


def build_model(spec: ModelSpec, device: str, dtype: Any, attn: str) -> Any:
    """The model on its device, in eval mode: a preset built there with random weights
    (nothing goes through the host's memory), a registered one loaded from its folder."""
    import torch
    import transformers

    if spec.preset is not None:
        config = transformers.AutoConfig.for_model(**spec.config())
        with torch.device(device):
            model = transformers.AutoModelForCausalLM.from_config(
                config, dtype=dtype, attn_implementation=attn
            )
    else:
        model = transformers.AutoModelForCausalLM.from_pretrained(
            str(spec.path), dtype=dtype, attn_implementation=attn, local_files_only=True
        ).to(device)
    return model.eval()


def word(token_id: int) -> str:
    """The synthetic tokenizer's text for one id."""
    return f"t{token_id}"


def prompt_text(ids: list[int]) -> str:
    """A prompt of ids as the synthetic tokenizer's text: exactly len(ids) tokens."""
    return " ".join(word(i) for i in ids)


def write_served_folder(spec: ModelSpec, folder: Path, dtype: str) -> Path:
    """A preset as a folder an HTTP server loads: config, synthetic tokenizer, a stub
    checkpoint (see the module's docstring). Returns the folder."""
    import torch
    import transformers
    from safetensors.torch import save_file
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    assert spec.preset is not None
    folder.mkdir(parents=True, exist_ok=True)
    config = transformers.AutoConfig.for_model(**spec.config())
    causal_lm = transformers.models.auto.modeling_auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    config.architectures = [causal_lm[config.model_type]]
    config.dtype = dtype
    config.save_pretrained(folder)
    vocab = {word(i): i for i in range(config.vocab_size)}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token=word(0)))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
    transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer).save_pretrained(folder)
    norm = torch.ones(config.hidden_size, dtype=getattr(torch, dtype))
    checkpoint = folder / "model.safetensors"
    save_file({"model.norm.weight": norm}, str(checkpoint), {"format": "pt"})
    checkpoint.chmod(0o644)  # safetensors writes 0600; a sandboxed reader is another uid
    return folder
