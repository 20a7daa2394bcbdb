"""The blas-bench kind: GEMM, memory bandwidth, FFT and dense solvers that can be trusted.

The work lives in stack/blas/ (runner.py plans and reports; gemm.py,
families.py, blas_tools.py measure; telemetry.py samples the GPU). This
module is the entry point the registry names, and stays light: the zygote
imports it ahead of time, so torch and numpy are imported only inside run().
"""

from __future__ import annotations

from typing import Any

from stack.runtime import RunContext, RunResult


def run(params: dict[str, Any], ctx: RunContext) -> RunResult:
    """Benchmark the math libraries as the params ask; see docs/blas-bench.md."""
    from stack.blas.runner import run as run_bench

    return run_bench(params, ctx)
