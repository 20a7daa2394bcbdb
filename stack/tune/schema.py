"""The params schema of the tune-gemm kind (JSON Schema, every field defaulted).

Shapes are BLAS calls (column-major m, n, k, transposes), as ``python -m stack shapes``
prints them from a profile, a rocBLAS / hipBLASLt log or a TunableOp file; or the text of
a TunableOp untuned file (``PYTORCH_TUNABLEOP_RECORD_UNTUNED=1``). Plain data.
"""

from __future__ import annotations

from typing import Any

from stack.blas.blas_tools import HIPBLASLT
from stack.blas.precisions import PRECISION_NAMES
from stack.blas.schema import INSTALL_HINTS as BLAS_TOOL_HINTS

TUNABLEOP = "tunableop"
METHODS = (TUNABLEOP, HIPBLASLT)
# TunableOp tunes the GEMMs PyTorch routes through at::cuda::blas: not torch._int_mm.
TUNABLE_PRECISIONS = tuple(p for p in PRECISION_NAMES if p != "int8")

INSTALL_HINTS: dict[str, str] = {HIPBLASLT: BLAS_TOOL_HINTS[HIPBLASLT]}

_TRANS = {"type": "string", "enum": ["N", "T"], "default": "N"}


def _integer(default: int, minimum: int, maximum: int, description: str) -> dict[str, Any]:
    return {
        "type": "integer",
        "minimum": minimum,
        "maximum": maximum,
        "default": default,
        "description": description,
    }


def _number(default: float, minimum: float, maximum: float, description: str) -> dict[str, Any]:
    return {
        "type": "number",
        "minimum": minimum,
        "maximum": maximum,
        "default": default,
        "description": description,
    }


PARAMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "method": {
            "type": "string",
            "enum": list(METHODS),
            "default": TUNABLEOP,
            "description": (
                "tunableop: PyTorch TunableOp chooses among rocBLAS / hipBLASLt solutions "
                "(ROCm) or cuBLAS's default (CUDA: one candidate) and writes its results "
                "file; hipblaslt-bench: --algo_method all times every hipBLASLt solution"
            ),
        },
        "shapes": {
            "type": "array",
            "maxItems": 256,
            "items": {
                "type": "object",
                "properties": {
                    "precision": {"type": "string", "enum": list(TUNABLE_PRECISIONS)},
                    "m": {"type": "integer", "minimum": 1, "maximum": 1 << 20},
                    "n": {"type": "integer", "minimum": 1, "maximum": 1 << 20},
                    "k": {"type": "integer", "minimum": 1, "maximum": 1 << 20},
                    "batch": {"type": "integer", "minimum": 1, "maximum": 1 << 16, "default": 1},
                    "transa": _TRANS,
                    "transb": _TRANS,
                    "calls": {"type": "integer", "minimum": 0},
                },
                "required": ["precision", "m", "n", "k"],
                "additionalProperties": False,
            },
            "default": [],
            "description": "GEMMs to tune, as BLAS calls (column-major), e.g. a profile's",
        },
        "untuned": {
            "type": "string",
            "maxLength": 1 << 20,
            "default": "",
            "description": "the text of a TunableOp untuned file: its GEMMs are tuned too",
        },
        "max_tuning_duration_ms": _integer(
            30, 1, 600000, "TunableOp: time spent timing each candidate of one GEMM at most"
        ),
        "max_tuning_iterations": _integer(
            100, 1, 100000, "TunableOp: calls timed per candidate at most"
        ),
        "rotating_buffer_mb": _integer(
            0,
            0,
            65536,
            "inputs rotated through while tuning, MiB (0: TunableOp's default, the L2 size)",
        ),
        "verbose": _integer(1, 0, 3, "PYTORCH_TUNABLEOP_VERBOSE while tuning (its log is kept)"),
        "measure": {
            "type": "boolean",
            "default": True,
            "description": "time each shape before and after, interleaved, blas-bench's way",
        },
        "rounds": _integer(3, 1, 20, "interleaved before/after rounds per shape"),
        "warmup_s": _number(0.1, 0, 60, "warm-up per timing, as blas-bench"),
        "min_reps": _integer(10, 2, 100000, "fewest samples per timing"),
        "max_reps": _integer(200, 2, 1000000, "most samples per timing"),
        "target_cv": _number(0.01, 0, 1, "stop sampling once stdev/mean is at most this"),
        "case_budget_s": _number(1.0, 0.01, 3600, "sampling budget per timing"),
        "min_sampling_s": _number(0.2, 0, 3600, "sample each timing for at least this long"),
        "tool_iters": _integer(20, 1, 100000, "hipblaslt-bench: hot iterations (-i)"),
        "tool_cold_iters": _integer(5, 0, 100000, "hipblaslt-bench: cold iterations (-j)"),
        "tool_timeout_s": _number(600, 1, 86400, "hipblaslt-bench: one run at most"),
        "gpu_index": _integer(0, 0, 63, "which GPU"),
        "seed": _integer(0, 0, 2**31 - 1, "seed of the inputs"),
        "environment": {
            "type": "boolean",
            "default": True,
            "description": "fingerprint the machine with the probe's code, as blas-bench does",
        },
        "driver_timeout_s": _integer(3600, 10, 86400, "the tuning process at most"),
    },
    "additionalProperties": False,
}
