"""Turning a job's params into the list of GEMM cases to run.

A case is one (precision, m, n, k, batch, transa, transb). The square sweep
gives m = n = k for each size and each requested transpose pair; ``shapes``
adds the user's own problems (a transformer's projections, a batched GEMM).
Cases are ordered by work within each precision, smallest first, so that a
rate measured on a small case can predict whether a big one fits the budget.

Transposes: for torch, "N" means the operand is stored row-major as written
(A is m x k), "T" that it is stored transposed (A is k x m, used through a
``.t()`` view, which the BLAS handles without a copy). For rocblas-bench and
hipblaslt-bench the flags are passed as the tools' own (column-major BLAS)
``--transposeA/--transA`` options.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stack.blas.inputs import NORMAL
from stack.blas.precisions import PRECISION_NAMES, gemm_flops


@dataclass(frozen=True)
class GemmCase:
    """One GEMM problem."""

    precision: str
    m: int
    n: int
    k: int
    batch: int = 1
    transa: str = "N"
    transb: str = "N"

    @property
    def flops(self) -> int:
        """Operations of one call."""
        return gemm_flops(self.m, self.n, self.k, self.batch)

    def as_case(
        self, backend: str, device: str, cold_cache: bool, inputs: str = NORMAL
    ) -> dict[str, Any]:
        """The measurement's case dict (scalars only, so it can be a database key).

        ``inputs`` is part of it: the same shape fed other data is another case.
        """
        return {
            "backend": backend,
            "device": device,
            "precision": self.precision,
            "m": self.m,
            "n": self.n,
            "k": self.k,
            "batch": self.batch,
            "transa": self.transa,
            "transb": self.transb,
            "cold_cache": cold_cache,
            "inputs": inputs,
        }

    def label(self) -> str:
        """Short text for logs: "bf16 8192x8192x8192 NN" (with "x32" for a batch)."""
        batch = f" batch {self.batch}" if self.batch > 1 else ""
        return f"{self.precision} {self.m}x{self.n}x{self.k} {self.transa}{self.transb}{batch}"


def gemm_cases(params: dict[str, Any]) -> list[GemmCase]:
    """Every GEMM case the params ask for, grouped by precision, smallest first."""
    precisions = [p for p in PRECISION_NAMES if p in params.get("precisions", PRECISION_NAMES)]
    pairs = params.get("transposes") or ["NN"]
    shapes: list[tuple[int, int, int, int, str, str]] = []
    for size in params.get("sizes") or []:
        for pair in pairs:
            shapes.append((size, size, size, 1, pair[0], pair[1]))
    for shape in params.get("shapes") or []:
        shapes.append(
            (
                int(shape["m"]),
                int(shape["n"]),
                int(shape["k"]),
                int(shape.get("batch", 1)),
                str(shape.get("transa", "N")),
                str(shape.get("transb", "N")),
            )
        )
    # dict.fromkeys drops repeats and keeps first-seen order, which the stable sort keeps
    # among equal keys; neither depends on the precision, so one ordered list serves all
    unique = sorted(
        dict.fromkeys(shapes),
        key=lambda s: (gemm_flops(s[0], s[1], s[2], s[3]), s[3], s[4], s[5]),
    )
    return [GemmCase(precision, *shape) for precision in precisions for shape in unique]
