"""The tune-gemm kind: choose the fastest GEMM kernels for the shapes a workload runs.

The work lives in stack/tune/ (runner.py and driver.py tune and time, shapes.py reads the
shapes, files.py the tuned files, registry.py decides which file fits which stack). This
module is the entry point the registry names, and stays light.
"""

from __future__ import annotations

from typing import Any

from stack.kinds.base import Cap, Kind, RoadmapTask
from stack.runtime import RunContext, RunResult
from stack.tune.schema import INSTALL_HINTS, PARAMS_SCHEMA

KIND = Kind(
    name="tune-gemm",
    title="Tune GEMM kernels",
    description=(
        "Tunes the GEMM shapes a workload runs (from a profile, a rocBLAS or hipBLASLt log, "
        "or a TunableOp untuned file) with PyTorch TunableOp — or hipblaslt-bench "
        "--algo_method all — keeps the tuned file, registered by GPU and stack versions so "
        "later jobs can use it, and times each shape before and after, interleaved, as "
        "speedups with 95 % intervals. On CUDA TunableOp often has one candidate: it says so."
    ),
    params_schema=PARAMS_SCHEMA,
    default_timeout_s=3600,
    runner="stack.kinds.tune_gemm:run",
    needs_gpu=True,
    phases=(3,),
    roadmap_tasks=(RoadmapTask.TUNE_KERNELS,),
    install_hints=INSTALL_HINTS,
    param_caps={"driver_timeout_s": Cap.RUN_SECONDS, "tool_timeout_s": Cap.RUN_SECONDS},
)


def run(params: dict[str, Any], ctx: RunContext) -> RunResult:
    """Tune as the params ask; see docs/profiling.md."""
    from stack.tune.runner import run as run_tune

    return run_tune(params, ctx)
