"""The precisions a GEMM can be asked for, and what each one implies.

One table, so that the byte counts (memory footprint), the unit of the rate
(TFLOP/s or TOPS for integers) and the tolerance of the correctness check are
decided in one place and agree between the backends.

Tolerances. A GEMM result is compared element by element with a float64
reference computed from the very inputs the backend received (upcast, so
low-precision inputs are exact in the reference). The error of element
(i, j) is divided by ``|row i of op(A)| * |column j of op(B)|`` (Euclidean
norms): by Cauchy-Schwarz that product bounds every partial sum of the dot
product, so the rounding of inputs, of the accumulation and of the output
are all small multiples of the unit roundoff in this scale, whatever k is.
The tolerance is ``4 * (2 * u_in + u_out) + 2 * sqrt(k) * u_acc``: inputs
rounded on the way in (TF32 only), the output stored in its precision, and
accumulation error growing like sqrt(k) (the usual statistical model; the
worst case k * u is far too loose to catch a wrong element). INT8 with int32
accumulation is exact, so its tolerance is zero.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

PRECISION_NAMES = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8")


@dataclass(frozen=True)
class Precision:
    """How one precision is stored, counted and checked."""

    name: str
    in_bytes: int  # bytes per element of A and B
    out_bytes: int  # bytes per element of C
    unit: str  # TFLOP/s, or TOPS for integer math
    u_in: float  # relative rounding of the inputs inside the GEMM (TF32: fp32 -> tf32)
    u_out: float  # unit roundoff of the stored output
    u_acc: float  # unit roundoff of the accumulation

    def tolerance(self, k: int) -> float:
        """Largest acceptable normalised element error for a GEMM of inner size k."""
        if self.u_in == self.u_out == self.u_acc == 0:
            return 0.0
        return 4 * (2 * self.u_in + self.u_out) + 2 * math.sqrt(max(k, 1)) * self.u_acc

    def footprint_bytes(self, m: int, n: int, k: int, batch: int = 1) -> int:
        """Bytes of A, B and C for one GEMM (what must sit in device memory at once)."""
        return batch * ((m * k + k * n) * self.in_bytes + m * n * self.out_bytes)


_U64 = 2.0**-53
_U32 = 2.0**-24

PRECISIONS: dict[str, Precision] = {
    p.name: p
    for p in (
        # IEEE double; matrix FP64 units
        Precision("fp64", 8, 8, "TFLOP/s", 0.0, _U64, _U64),
        # IEEE single, full-precision math
        Precision("fp32", 4, 4, "TFLOP/s", 0.0, _U32, _U32),
        # float32 storage, inputs rounded to TF32 (NVIDIA) / XF32 (AMD gfx942) in matrix
        # units; 10 stored mantissa bits, truncation on some paths
        Precision("tf32", 4, 4, "TFLOP/s", 2.0**-10, _U32, _U32),
        # half inputs and output, fp32 accumulation
        Precision("fp16", 2, 2, "TFLOP/s", 0.0, 2.0**-11, _U32),
        # bfloat16 inputs and output, fp32 accumulation
        Precision("bf16", 2, 2, "TFLOP/s", 0.0, 2.0**-8, _U32),
        # FP8 E4M3 inputs (per-tensor scale 1), bf16 output; Hopper's FP8 tensor cores
        # accumulate with fewer bits than fp32
        Precision("fp8", 1, 2, "TFLOP/s", 0.0, 2.0**-8, 2.0**-13),
        # int8 inputs, int32 accumulation and output
        Precision("int8", 1, 4, "TOPS", 0.0, 0.0, 0.0),
    )
}


def get(name: str) -> Precision:
    """The Precision of that name (KeyError names the known ones)."""
    try:
        return PRECISIONS[name]
    except KeyError:
        raise KeyError(f"unknown precision {name!r}; known: {', '.join(PRECISION_NAMES)}") from None


def gemm_flops(m: int, n: int, k: int, batch: int = 1) -> int:
    """Operations of C = A @ B: one multiply and one add per (i, j, l)."""
    return 2 * m * n * k * batch
