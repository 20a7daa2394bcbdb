"""The blas-bench kind: GEMM, memory bandwidth, FFT and dense solvers that can be trusted.

The work lives in stack/blas/ (runner.py plans and reports; gemm.py,
families.py, blas_tools.py measure; telemetry.py samples the GPU). This
module is the entry point the registry names, and stays light: the zygote
imports it ahead of time, so torch and numpy are imported only inside run().
"""

from __future__ import annotations

from typing import Any

from stack.blas.schema import INSTALL_HINTS as BLAS_TOOL_HINTS
from stack.blas.schema import PARAMS_SCHEMA as BLAS_BENCH_PARAMS
from stack.kinds.base import Kind, RoadmapTask
from stack.runtime import RunContext, RunResult

KIND = Kind(
    name="blas-bench",
    title="Math-library benchmarks",
    description=(
        "GEMM in every precision (FP64 to INT8) over square sweeps, user shapes and batched "
        "problems, plus memory bandwidth, FFT and dense solvers, through PyTorch (cuBLAS / "
        "rocBLAS / hipBLASLt), numpy, rocblas-bench or hipblaslt-bench. Each case is warmed "
        "up, sampled until stable, checked against a float64 reference and reported with "
        "its % of the vendor peak, the GPU clocks, power and temperature seen while it ran, "
        "and the BF16/INT8/FP8 ratios people quote next to the measured ones."
    ),
    params_schema=BLAS_BENCH_PARAMS,
    # The defaults are the full sweep (7 precisions to 8192, an hour on a CPU): a first
    # run is two precisions of three sizes, a minute or so anywhere.
    example_params={
        "families": ["gemm"],
        "precisions": ["fp32", "bf16"],
        "sizes": [512, 1024, 2048],
    },
    default_timeout_s=3600,
    runner="stack.kinds.blas_bench:run",
    needs_gpu=True,
    phases=(1, 3),
    roadmap_tasks=(
        RoadmapTask.BENCHMARK_LIBRARIES,
        RoadmapTask.BASELINE,
    ),
    install_hints=BLAS_TOOL_HINTS,
)


def run(params: dict[str, Any], ctx: RunContext) -> RunResult:
    """Benchmark the math libraries as the params ask; see docs/blas-bench.md."""
    from stack.blas.runner import run as run_bench

    return run_bench(params, ctx)
