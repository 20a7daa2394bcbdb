"""The profile kind: where a workload spends its time, kernel by kernel, on any platform.

The work lives in stack/profile/ (runner.py runs the profilers, driver.py the workload,
ncu.py / rocprof.py / torch_profiler.py read their output, normalise.py makes one
profile of them). This module is the entry point the registry names, and stays light.
"""

from __future__ import annotations

from typing import Any

from stack.kinds.base import Cap, Kind, RoadmapTask
from stack.profile.schema import INSTALL_HINTS, PARAMS_SCHEMA
from stack.runtime import RunContext, RunResult

KIND = Kind(
    name="profile",
    title="Profile a workload",
    description=(
        "Runs a GEMM, a small transformer block in plain PyTorch, or a Python script of the "
        "project's source under the PyTorch profiler (CPU, CUDA or ROCm; a Chrome trace "
        "Perfetto opens) and, on the GPU's vendor, Nsight Compute (occupancy, compute and "
        "DRAM throughput, L2 hit rate) or rocprofv3 (kernel trace and statistics). One "
        "normalised profile whatever the profiler: the top kernels by time with their "
        "calls, mean time, share and counters, stored as measurements to compare."
    ),
    params_schema=PARAMS_SCHEMA,
    default_timeout_s=3600,
    runner="stack.kinds.profile:run",
    takes_source=True,
    needs_gpu=False,
    phases=(2, 3),
    roadmap_tasks=(
        RoadmapTask.FIND_BOTTLENECKS,
        RoadmapTask.MEMORY_ACCESS,
    ),
    install_hints=INSTALL_HINTS,
    param_caps={
        "workload_timeout_s": Cap.RUN_SECONDS,
        "profiler_timeout_s": Cap.RUN_SECONDS,
        "trace_max_bytes": Cap.FILE_BYTES,
    },
)


def run(params: dict[str, Any], ctx: RunContext) -> RunResult:
    """Profile the workload as the params ask; see docs/profiling.md."""
    from stack.profile.runner import run as run_profile

    return run_profile(params, ctx)
