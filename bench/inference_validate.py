"""inference-bench's timing held to an independent clock, on a GPU.

The job stamps each token with the engine's own clock (transformers' continuous batching
records a perf_counter per token). Here the same requests also run under CUDA events:
one recorded when the requests are handed over, one at the end of every forward pass
(a hook on the model; CUDA graphs are off so that each step calls it). With all requests
of a case the same length and prefilled in one pass, every request's first token is the
first pass's end and each later token one decode pass's end, so

    TTFT (events) = anchor -> end of pass 0
    TPOT (events) = (end of pass n-1 - end of pass 0) / (n - 1)

and the job's TTFT and TPOT for the same run must agree within 5 %. The KV cache the
engine allocated is compared with the config's bytes per token and with what torch's
allocator saw it take.

Run on the GPU machine:  python bench/inference_validate.py --out docs/results/inference
(preset llama-3-8b, concurrency 1 8 32, 512 input tokens, 64 output tokens).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stack.inference import metrics, models, offline, presets
from stack.inference.prompts import Lengths, make_prompts


def validate(
    preset: str,
    layers: int,
    concurrency: int,
    input_len: int,
    output_len: int,
    model: Any,
    dtype: str,
) -> dict[str, Any]:
    import torch

    config = presets.preset_config(preset, layers)
    prompts = make_prompts(concurrency, Lengths("fixed", input_len), config["vocab_size"], 0)
    ends: list[Any] = []

    def after(_module: Any, _args: Any, _output: Any) -> None:
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        ends.append(event)

    anchor = torch.cuda.Event(enable_timing=True)
    handle = model.register_forward_hook(after)
    try:
        torch.cuda.reset_peak_memory_stats()
        records, duration, cache = offline.run_case(
            model,
            prompts,
            [output_len] * concurrency,
            concurrency=concurrency,
            block_size=256,
            num_blocks=concurrency * -(-(input_len + output_len) // 256) + 1,
            max_batch_tokens=concurrency * input_len + concurrency,
            timeout_s=900,
            cuda=True,
            cuda_graphs=False,
            on_start=anchor.record,
        )
        torch.cuda.synchronize()
    finally:
        handle.remove()
    passes = [anchor.elapsed_time(e) for e in ends]  # ms after the anchor
    stats = metrics.summarize(records, duration)
    ttft_events = passes[0]
    tpot_events = (passes[output_len - 1] - passes[0]) / (output_len - 1)
    kv_formula = presets.kv_bytes_per_token(config, dtype)
    result = {
        "concurrency": concurrency,
        "forward_passes": len(passes),
        "expected_passes": output_len,
        "ttft_ms": {
            "job_p50": stats["ttft_ms"]["p50"],
            "job_mean": stats["ttft_ms"]["mean"],
            "events": ttft_events,
        },
        "tpot_ms": {
            "job_p50": stats["tpot_ms"]["p50"],
            "job_mean": stats["tpot_ms"]["mean"],
            "events": tpot_events,
        },
        "completed": stats["completed"],
        "output_throughput": stats["output_throughput"],
        "cache": cache.as_dict(),
        "kv_bytes_per_token": {
            "formula": kv_formula,
            "engine": cache.extra.get("engine_kv_bytes_per_token"),
        },
        "peak_memory_bytes": torch.cuda.max_memory_allocated(),
    }
    for name in ("ttft_ms", "tpot_ms"):
        row = result[name]
        row["ratio"] = row["job_p50"] / row["events"]
        row["within_5_percent"] = abs(row["ratio"] - 1) <= 0.05
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", default="llama-3-8b")
    parser.add_argument("--layers", type=int, default=0)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--input-len", type=int, default=512)
    parser.add_argument("--output-len", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    import torch

    dtype = "bfloat16"
    spec = models.ModelSpec(args.preset, preset=args.preset, layers=args.layers)
    began = time.perf_counter()
    model = models.build_model(spec, "cuda", torch.bfloat16, "paged|sdpa")
    built_s = time.perf_counter() - began
    # one untimed pass of each shape first: the allocator and kernels' first-call costs
    validate(args.preset, args.layers, 1, 16, 4, model, dtype)
    rows = []
    for concurrency in args.concurrency:
        runs = [
            validate(
                args.preset, args.layers, concurrency, args.input_len, args.output_len, model, dtype
            )
            for _ in range(args.repeats)
        ]
        rows.append(
            {
                "concurrency": concurrency,
                "runs": runs,
                "ttft_ratio_median": statistics.median(r["ttft_ms"]["ratio"] for r in runs),
                "tpot_ratio_median": statistics.median(r["tpot_ms"]["ratio"] for r in runs),
            }
        )
        print(
            json.dumps(
                {k: rows[-1][k] for k in ("concurrency", "ttft_ratio_median", "tpot_ratio_median")}
            ),
            flush=True,
        )
    document = {
        "command": " ".join(sys.argv),
        "gpu": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "transformers": __import__("transformers").__version__,
        "model": {
            "preset": args.preset,
            "layers": presets.preset_config(args.preset, args.layers)["num_hidden_layers"],
            "parameters": presets.parameter_count(presets.preset_config(args.preset, args.layers)),
            "built_s": built_s,
        },
        "workload": {"input_len": args.input_len, "output_len": args.output_len},
        "cases": rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "validate-h200.json").write_text(json.dumps(document, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
