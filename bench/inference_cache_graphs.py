"""Decode speed against the KV cache's size and CUDA graphs (transformers' continuous
batching on a GPU).

Why inference-bench sizes its cache for the workload and turns CUDA graphs on: a 4-layer
Llama-3-8B-shaped model, 1 and 8 requests of 512 tokens, 32 output tokens, at the
engine's default cache (90 % of free memory), 64 and 2,048 blocks, graphs auto/off/on.
Run from the repository's root: python3 bench/inference_cache_graphs.py
Its output on the H200: docs/results/inference/h200-cache-and-graphs.txt
"""

import sys
import time

import torch

sys.path.insert(0, ".")
from stack.inference import metrics, models, offline
from stack.inference.prompts import Lengths, make_prompts

spec = models.ModelSpec("l", preset="llama-3-8b", layers=4)
m = models.build_model(spec, "cuda", torch.bfloat16, "paged|sdpa")
prompts = make_prompts(8, Lengths("fixed", 512), 128256, 0)
for nb, mbt, graphs in [
    (0, 0, None),
    (64, 4096, None),
    (64, 4096, False),
    (64, 4096, True),
    (2048, 8192, None),
    (0, 0, False),
]:
    for c in (1, 8):
        t = time.time()
        recs, dur, cache = offline.run_case(
            m,
            prompts[:c],
            [32] * c,
            concurrency=c,
            block_size=256,
            num_blocks=nb,
            max_batch_tokens=mbt,
            timeout_s=300,
            cuda=True,
            cuda_graphs=graphs,
        )
        s = metrics.summarize(recs, dur)
        ttft, tpot = s["ttft_ms"]["p50"], s["tpot_ms"]["p50"]
        print(
            f"nb={nb} mbt={mbt} graphs={graphs} c={c}: blocks={cache.num_blocks} "
            f"TTFT p50 {ttft:.1f} TPOT p50 {tpot:.2f} ms wall {time.time() - t:.1f}s "
            f"alloc={cache.allocator_bytes} bytes={cache.bytes}",
            flush=True,
        )
