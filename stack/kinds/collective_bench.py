"""The collective-bench kind: collectives over a size sweep on the job's GPUs (or CPUs).

The work is in stack/collectives/ (runner.py, worker.py: one process per rank;
formulas.py: nccl-tests' algbw / busbw; nccl_tests.py: the rccl-tests / nccl-tests
binaries; topology.py: the links and their peaks). See docs/collectives.md.
"""

from __future__ import annotations

from typing import Any

from stack.collectives.formulas import DTYPE_BYTES, OPS
from stack.kinds.base import Cap, Kind, RoadmapTask
from stack.runtime import RunContext, RunResult

MIB = 2**20

KIND = Kind(
    name="collective-bench",
    title="Collective communication benchmark",
    description=(
        "All-reduce, all-gather, reduce-scatter, all-to-all, broadcast and send/recv over a "
        "size sweep through torch.distributed: one process per GPU with NCCL (RCCL on ROCm "
        "builds), or CPU processes with gloo. algbw and busbw with nccl-tests' formulas, "
        "every result checked, the links between the GPUs and their peak; rccl-tests / "
        "nccl-tests binaries too where the image has them. Lease the GPUs with "
        "hardware.gpu_count."
    ),
    params_schema={
        "type": "object",
        "properties": {
            "collectives": {
                "type": "array",
                "items": {"enum": list(OPS)},
                "minItems": 1,
                "uniqueItems": True,
                "default": list(OPS),
                "description": "Which collectives to measure.",
            },
            "backend": {
                "enum": ["auto", "nccl", "gloo"],
                "default": "auto",
                "description": "auto: nccl (RCCL on ROCm) when torch sees a GPU, else gloo.",
            },
            "ranks": {
                "type": "integer",
                "minimum": 0,
                "maximum": 64,
                "default": 0,
                "description": "Processes; 0: every visible GPU (gloo: 2).",
            },
            "min_bytes": {
                "type": "integer",
                "minimum": 1,
                "maximum": 2**34,
                "default": 8,
                "description": "Smallest size (nccl-tests -b).",
            },
            "max_bytes": {
                "type": "integer",
                "minimum": 1,
                "maximum": 2**34,
                "default": 128 * MIB,
                "description": "Largest size (nccl-tests -e).",
            },
            "factor": {
                "type": "integer",
                "minimum": 2,
                "maximum": 16,
                "default": 2,
                "description": "Size multiplier per step (nccl-tests -f).",
            },
            "dtype": {
                "enum": list(DTYPE_BYTES),
                "default": "float32",
                "description": "Element type.",
            },
            "iters": {
                "type": "integer",
                "minimum": 1,
                "maximum": 10000,
                "default": 20,
                "description": "Calls per timed block (nccl-tests -n).",
            },
            "warmup": {
                "type": "integer",
                "minimum": 0,
                "maximum": 1000,
                "default": 5,
                "description": "Untimed calls first (nccl-tests -w).",
            },
            "repeats": {
                "type": "integer",
                "minimum": 1,
                "maximum": 100,
                "default": 5,
                "description": "Timed blocks per size: the samples behind each figure.",
            },
            "rank_timeout_s": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": 86400,
                "default": 900,
                "description": "Limit for the ranks' whole run.",
            },
            "tools": {
                "type": "boolean",
                "default": True,
                "description": "Also run rccl-tests / nccl-tests binaries found on PATH.",
            },
            "tool_timeout_s": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": 86400,
                "default": 600,
                "description": "Limit for one binary's run.",
            },
        },
        "additionalProperties": False,
    },
    default_timeout_s=3600,
    runner="stack.kinds.collective_bench:run",
    needs_gpu=True,
    phases=(3,),
    roadmap_tasks=(RoadmapTask.MULTI_GPU,),
    install_hints={
        "all_reduce_perf": "build rccl-tests (github.com/ROCm/rccl-tests) or nccl-tests "
        "(github.com/NVIDIA/nccl-tests) into the image and put its build/ on PATH",
    },
    param_caps={
        "rank_timeout_s": Cap.RUN_SECONDS,
        "tool_timeout_s": Cap.RUN_SECONDS,
        "ranks": Cap.PROCESSES,
    },
)


def run(params: dict[str, Any], ctx: RunContext) -> RunResult:
    """Measure the collectives as the params ask; see docs/collectives.md."""
    from stack.collectives.runner import run as run_collectives

    if params["min_bytes"] > params["max_bytes"]:
        return RunResult(status="errored", error="min_bytes is larger than max_bytes")
    return run_collectives(params, ctx)
