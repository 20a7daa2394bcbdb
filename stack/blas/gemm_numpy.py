"""GEMM through numpy on the CPU: the host baseline every GPU figure is set against.

numpy's matmul reaches the BLAS it was built with (OpenBLAS in the wheels)
for float64 and float32. It has no bfloat16, FP8 or TF32 types and no int8
GEMM that accumulates in int32, and computes float16 matmul in a generic
loop, not in BLAS; those facts are what the job reports.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stack.blas.cases import GemmCase
from stack.blas.inputs import NORMAL, numpy_operand

UNSUPPORTED = {
    "tf32": "TF32 is a mode of GPU matrix units; numpy computes float32 in full precision",
    "bf16": "numpy has no bfloat16 dtype",
    "fp8": "numpy has no FP8 dtypes",
    "int8": (
        "numpy's integer matmul does not go through BLAS and accumulates in the input "
        "type (int8 overflows); there is no int8 GEMM with int32 accumulation"
    ),
}

NOTES = {"fp16": "numpy computes float16 matmul in a generic loop, not in BLAS: expect it slow"}

_DTYPES = {"fp64": "float64", "fp32": "float32", "fp16": "float16"}


def unsupported(precision: str) -> str | None:
    """Why numpy cannot run the precision (None if it can)."""
    return UNSUPPORTED.get(precision)


def make_operands(np: Any, case: GemmCase, seed: int, inputs: str = NORMAL) -> tuple[Any, Any]:
    """Random A and B (as the GEMM sees them: transposed views where asked)."""
    rng = np.random.default_rng(seed)
    dtype = getattr(np, _DTYPES[case.precision])
    lead = (case.batch,) if case.batch > 1 else ()

    def operand(rows: int, cols: int, trans: str) -> Any:
        shape = (*lead, cols, rows) if trans == "T" else (*lead, rows, cols)
        stored = numpy_operand(np, rng, shape, dtype, inputs)
        return np.swapaxes(stored, -1, -2) if trans == "T" else stored

    return operand(case.m, case.k, case.transa), operand(case.k, case.n, case.transb)


def gemm_call(np: Any, a: Any, b: Any) -> Callable[[], Any]:
    """A no-argument function that runs the GEMM once and returns C."""
    matmul = np.matmul
    return lambda: matmul(a, b)


def library_name(np: Any) -> str:
    """The BLAS numpy was built with (best effort)."""
    try:
        config = np.show_config(mode="dicts")
        blas = config.get("Build Dependencies", {}).get("blas", {})
        name = blas.get("name")
        version = blas.get("version")
        if name:
            return f"{name} {version}" if version else str(name)
    except Exception:  # noqa: S110 - cosmetic
        pass
    return "numpy BLAS"
