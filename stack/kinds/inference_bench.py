"""The inference-bench kind: how fast an LLM serves, offline and online.

The work is in stack/inference/ (runner.py: the cases; offline.py: transformers'
continuous batching in process; online.py: ``transformers serve`` started by the job and
client.py's streaming load; metrics.py: vLLM's definitions; presets.py: model shapes
and KV bytes per token; registry.py: operator-registered model folders; parsers.py:
guidellm's and ``vllm bench serve``'s JSON; external.py: those tools driven as the online
client where installed). See docs/inference.md.
"""

from __future__ import annotations

from typing import Any

from stack.inference.external import CLIENTS
from stack.inference.external import INSTALL_HINTS as CLIENT_HINTS
from stack.inference.presets import PRESETS
from stack.inference.prompts import DISTRIBUTIONS
from stack.inference.registry import NAME_PATTERN
from stack.kinds.base import Cap, GateCheck, GateCriterion, Kind, NewRoadmapTask
from stack.runtime import RunContext, RunResult


def _length(name: str, default: int, dist: str) -> dict[str, dict[str, Any]]:
    return {
        f"{name}_dist": {
            "enum": list(DISTRIBUTIONS),
            "default": dist,
            "description": f"How {name} lengths spread: fixed, uniform on [min, max], "
            "or lognormal (ShareGPT-like) with the length as its median.",
        },
        f"{name}_len": {
            "type": "integer",
            "minimum": 1,
            "maximum": 131072,
            "default": default,
            "description": f"{name.capitalize()} tokens per request (fixed; lognormal's median).",
        },
        f"{name}_min": {
            "type": "integer",
            "minimum": 0,
            "maximum": 131072,
            "default": 0,
            "description": "Shortest (uniform, lognormal); 0: 1.",
        },
        f"{name}_max": {
            "type": "integer",
            "minimum": 0,
            "maximum": 131072,
            "default": 0,
            "description": "Longest (uniform, lognormal); 0: 4 x the length.",
        },
    }


KIND = Kind(
    name="inference-bench",
    title="LLM serving benchmark",
    description=(
        "TTFT, TPOT, inter-token latency and end-to-end latency (p50/p90/p99, vLLM's "
        "definitions), request and token throughput, KV-cache bytes per token and the "
        "engine's cache, peak GPU memory and tokens per joule, per concurrency. Offline "
        "through transformers' continuous batching (generate_batch, paged attention) and "
        "online against `transformers serve` started by the job on 127.0.0.1. Models are "
        "architecture presets with random weights (nothing downloaded) or folders the "
        "operator registered on the worker."
    ),
    params_schema={
        "type": "object",
        "properties": {
            "modes": {
                "type": "array",
                "items": {"enum": ["offline", "online"]},
                "minItems": 1,
                "uniqueItems": True,
                "default": ["offline"],
                "description": "offline: the engine's batch API in the job; online: a "
                "streaming OpenAI-compatible server the job starts.",
            },
            "model": {
                "enum": list(PRESETS),
                "default": "llama-3-8b",
                "description": "Architecture preset, built with random weights.",
            },
            "layers": {
                "type": "integer",
                "minimum": 0,
                "maximum": 256,
                "default": 0,
                "description": "Override the preset's layer count (0: its own), e.g. a "
                "few layers of Llama-3-70B on one GPU.",
            },
            "registered_model": {
                "type": "string",
                "default": "",
                "maxLength": 128,
                "pattern": f"^$|{NAME_PATTERN}",
                "description": "A model registered on the worker (ROCPATH_MODEL_ROOT), "
                "by name; overrides model.",
            },
            "dtype": {
                "enum": ["auto", "bfloat16", "float16", "float32"],
                "default": "auto",
                "description": "auto: bfloat16 on a GPU, float32 on a CPU.",
            },
            "attn_implementation": {
                "enum": ["paged|sdpa", "paged|eager", "paged|flash_attention_2"],
                "default": "paged|sdpa",
                "description": "The paged attention kernel transformers uses.",
            },
            "device": {
                "enum": ["auto", "cuda", "cpu"],
                "default": "auto",
                "description": "auto: the GPU when torch sees one (CUDA or ROCm).",
            },
            "requests": {
                "type": "integer",
                "minimum": 1,
                "maximum": 100000,
                "default": 64,
                "description": "Requests per case.",
            },
            **_length("input", 512, "uniform"),
            **_length("output", 64, "fixed"),
            "concurrency": {
                "type": "array",
                "items": {"type": "integer", "minimum": 1, "maximum": 4096},
                "minItems": 1,
                "maxItems": 32,
                "default": [1, 8, 32],
                "description": "Requests in flight (offline: per batch); one case each.",
            },
            "sweep": {
                "enum": ["none", "concurrency", "rate"],
                "default": "none",
                "description": "none: one case per concurrency listed. concurrency: from "
                "the smallest listed, doubled up to sweep_max_concurrency. rate (online; "
                "offline sweeps concurrency): Poisson requests/s from request_rate, doubled "
                "up to sweep_max_rate, at most the largest concurrency in flight. A sweep "
                "stops once the SLO breaks or throughput stops rising (docs/inference.md).",
            },
            "sweep_max_concurrency": {
                "type": "integer",
                "minimum": 1,
                "maximum": 4096,
                "default": 256,
                "description": "A concurrency sweep's last step (never above requests).",
            },
            "sweep_max_rate": {
                "type": "number",
                "minimum": 0,
                "maximum": 100000,
                "default": 64,
                "description": "A rate sweep's last step, requests/s.",
            },
            "slo_attainment": {
                "type": "number",
                "minimum": 0.5,
                "maximum": 1,
                "default": 0.9,
                "description": "Share of a step's requests that must keep every SLO bound "
                "for the step to meet the SLO (0.99: MLPerf's p99 bounds).",
            },
            "client": {
                "enum": list(CLIENTS),
                "default": "auto",
                "description": "Online: what loads the server. guidellm or vllm (`vllm "
                "bench serve`): that tool, run per concurrency, its own result file parsed; "
                "rocpath: the job's own streaming client; auto: guidellm if installed, "
                "else vllm, else rocpath. A tool named and not installed fails the online "
                "cases.",
            },
            "request_rate": {
                "type": "number",
                "minimum": 0,
                "maximum": 100000,
                "default": 0,
                "description": "Online: requests/s, Poisson arrivals; 0 sends all at once.",
            },
            **{
                f"slo_{name}_ms": {
                    "type": "number",
                    "minimum": 0,
                    "maximum": 3_600_000,
                    "default": 0,
                    "description": f"The team's {title} bound in ms for goodput (requests "
                    "that kept every bound set, per second); 0: none.",
                }
                for name, title in (("ttft", "TTFT"), ("tpot", "TPOT"), ("e2el", "E2EL"))
            },
            "seed": {
                "type": "integer",
                "minimum": 0,
                "maximum": 2**31 - 1,
                "default": 0,
                "description": "Seeds prompt lengths, token ids and arrivals.",
            },
            "warmup_requests": {
                "type": "integer",
                "minimum": 0,
                "maximum": 1024,
                "default": 4,
                "description": "Short untimed requests first, per mode.",
            },
            "cuda_graphs": {
                "type": "boolean",
                "default": True,
                "description": "Replay each step as a CUDA graph on a GPU (off: every "
                "step launched from Python, several times slower per token).",
            },
            "block_size": {
                "type": "integer",
                "minimum": 4,
                "maximum": 4096,
                "default": 256,
                "description": "Tokens per KV-cache block.",
            },
            "num_blocks": {
                "type": "integer",
                "minimum": 0,
                "maximum": 10_000_000,
                "default": 0,
                "description": "KV-cache blocks; 0: room for the largest concurrency of "
                "the longest request (the most that would fit is reported apart).",
            },
            "max_batch_tokens": {
                "type": "integer",
                "minimum": 0,
                "maximum": 10_000_000,
                "default": 0,
                "description": "Tokens per forward pass; 0: the engine's.",
            },
            "case_timeout_s": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": 86400,
                "default": 1800,
                "description": "Limit for one case.",
            },
            "server_start_timeout_s": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": 86400,
                "default": 900,
                "description": "Limit for the server to answer its first completion.",
            },
            "environment": {
                "type": "boolean",
                "default": True,
                "description": "Fingerprint the machine first (the probe).",
            },
        },
        "additionalProperties": False,
    },
    example_params={
        "model": "tiny-llama",
        "device": "cpu",
        "requests": 16,
        "input_len": 64,
        "output_len": 16,
        # a sweep under an SLO: the roadmap's "Benchmark inference serving" asks for a curve
        "concurrency": [1],
        "sweep": "concurrency",
        "slo_ttft_ms": 2000,
        "slo_tpot_ms": 100,
    },
    default_timeout_s=7200,
    runner="stack.kinds.inference_bench:run",
    needs_gpu=True,
    phases=(3, 4),
    # No built-in roadmap task is serving an LLM: this kind adds its own, and the gate
    # criterion that holds phase 4 to the baseline's goodput at the SLO.
    new_roadmap_tasks=(NewRoadmapTask(3, "benchmark-serving", "Benchmark inference serving"),),
    gate_criteria=(GateCriterion(4, GateCheck.SERVING_GOODPUT_NEAR_BASELINE, within_pct=10),),
    # The client tools the online cases drive where the image has them.
    install_hints=CLIENT_HINTS,
    param_caps={"case_timeout_s": Cap.RUN_SECONDS, "server_start_timeout_s": Cap.RUN_SECONDS},
)


def run(params: dict[str, Any], ctx: RunContext) -> RunResult:
    """Measure serving as the params ask; see docs/inference.md."""
    from stack.inference.runner import run as run_inference

    if params["sweep"] == "rate" and "online" in params["modes"]:
        start, end = params["request_rate"], params["sweep_max_rate"]
        if not start:
            return RunResult(
                status="errored",
                error="a rate sweep starts at request_rate: set it above 0 (requests/s)",
            )
        if end < start:
            return RunResult(
                status="errored",
                error=f"a rate sweep ends at sweep_max_rate ({end:g}), which is below where "
                f"it starts, request_rate ({start:g})",
            )
    for name in ("input", "output"):
        low, high = params[f"{name}_min"], params[f"{name}_max"]
        if high and low > high:
            return RunResult(status="errored", error=f"{name}_min is larger than {name}_max")
    return run_inference(params, ctx)
