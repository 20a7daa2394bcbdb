"""The paged-against-contiguous KV figures of an inference-bench run, checked against
what torch's CUDA allocator reports.

inference-bench computes (runner.paged_vs_contiguous, runner.paged_in_use) what a
contiguous cache would reserve and reads what the paged one held. This script takes a
finished GPU run's result.json and, on the same GPU:
- allocates, for each offline case, the contiguous cache its requests in flight would
  reserve (K and V, every layer, at the workload's longest request and, where it fits in
  the free memory, at the model's context) and reads ``torch.cuda.memory_allocated``
  before and after: the reservation the summary computed against the bytes torch took;
- allocates the paged blocks the engine held at its fullest (peak blocks x block size),
  likewise, and sets the figure beside the engine's own cache tensors' bytes.
Run from the repository's root on the GPU host after the kind:
    python3 bench/inference_kv_memory.py OUT/result.json > kv-memory.json
Its output on the H200: docs/results/inference/sweep-h200-*/kv-memory.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, ".")
from stack.inference import presets


def allocated(shape: tuple[int, ...], dtype: torch.dtype) -> int | None:
    """Bytes torch's allocator took for one tensor of this shape (None: it did not fit)."""
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    try:
        tensor = torch.empty(shape, dtype=dtype, device="cuda")
    except torch.OutOfMemoryError:
        return None
    took = torch.cuda.memory_allocated() - before
    del tensor
    torch.cuda.empty_cache()
    return took


def main(path: str) -> dict:
    result = json.loads(Path(path).read_text())
    summary = result["summary"]
    model = summary["model"]
    config = presets.preset_config(model["preset"], model["layers"])
    dtype = getattr(torch, model["dtype"])
    layers = int(config["num_hidden_layers"])
    kv_heads = int(config.get("num_key_value_heads") or config["num_attention_heads"])
    head_dim = int(config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"])
    memory = summary["memory"]
    figures = memory["paged_vs_contiguous"]
    longest = round(figures["request_bytes"]["contiguous_longest"] / model["kv_bytes_per_token"])
    rows = []
    for use in memory.get("paged_in_use", []):
        c = use["concurrency"]
        row = {"concurrency": c}
        for name, length in (
            ("contiguous_longest", longest),
            ("contiguous_model_max", figures["model_max_len"]),
        ):
            computed = use[f"{name}_bytes"]
            took = allocated((layers, 2, c, length, kv_heads, head_dim), dtype)
            row[name] = {"computed": computed, "torch_allocated": took}
        took = allocated(
            (layers, 2, use["peak_blocks"], figures["block_size"], kv_heads, head_dim), dtype
        )
        row["paged_peak"] = {"computed": use["paged_bytes"], "torch_allocated": took}
        rows.append(row)
    engine = [
        {
            "concurrency": c["concurrency"],
            "cache_tensor_bytes": c["cache"]["bytes"],
            "num_blocks": c["cache"]["num_blocks"],
            "formula_bytes": model["kv_bytes_per_token"]
            * (c["cache"]["num_blocks"] + 2)
            * c["cache"]["block_size"],
            "allocator_bytes": c["cache"]["allocator_bytes"],
        }
        for c in summary["cases"]
        if c["mode"] == "offline" and c.get("cache", {}).get("bytes")
    ]
    return {
        "device": torch.cuda.get_device_name(),
        "free_bytes_now": torch.cuda.mem_get_info()[0],
        "kv_bytes_per_token": model["kv_bytes_per_token"],
        "longest_request_tokens": longest,
        "model_max_len": figures["model_max_len"],
        "per_case": rows,
        "engine_cache": engine,
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1]), indent=1))
