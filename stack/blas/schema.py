"""The params schema of the blas-bench kind (JSON Schema, every field defaulted).

Kept beside the code that reads it; stack/kinds/blas_bench.py imports it to
register the kind, with the install hints of the benchmark clients it drives.
Plain data: importing this module costs nothing.
"""

from __future__ import annotations

from typing import Any

from stack.blas.inputs import DISTRIBUTIONS, NORMAL
from stack.blas.precisions import PRECISION_NAMES

FAMILIES = ("gemm", "bandwidth", "fft", "solver")
BACKENDS = ("torch", "numpy", "rocblas-bench", "hipblaslt-bench")
TRANSPOSES = ("NN", "NT", "TN", "TT")

# Where the library benchmark clients come from, for "not found" reasons (Kind.install_hints).
INSTALL_HINTS: dict[str, str] = {
    "rocblas-bench": (
        "Debian trixie package 'librocblas0-bench' "
        "(/usr/libexec/rocm/librocblas0-bench/rocblas-bench, not on PATH)"
    ),
    "hipblaslt-bench": (
        "hipBLASLt's benchmark client: /opt/rocm/bin/hipblaslt-bench in the ROCm images"
    ),
}


def _int_list(default: list[int], minimum: int, maximum: int, description: str) -> dict[str, Any]:
    return {
        "type": "array",
        "items": {"type": "integer", "minimum": minimum, "maximum": maximum},
        "maxItems": 64,
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


def _integer(default: int, minimum: int, maximum: int, description: str) -> dict[str, Any]:
    return {
        "type": "integer",
        "minimum": minimum,
        "maximum": maximum,
        "default": default,
        "description": description,
    }


_TRANS = {"type": "string", "enum": ["N", "T"], "default": "N"}

PARAMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "families": {
            "type": "array",
            "items": {"type": "string", "enum": list(FAMILIES)},
            "minItems": 1,
            "uniqueItems": True,
            "default": ["gemm", "bandwidth"],
            "description": (
                "Which library families to run: GEMM, memory bandwidth, FFT, dense solvers."
            ),
        },
        "backends": {
            "type": "array",
            "items": {"type": "string", "enum": list(BACKENDS)},
            "minItems": 1,
            "uniqueItems": True,
            "default": ["torch"],
            "description": (
                "torch (torch.cuda on CUDA or ROCm builds, else the CPU), numpy (CPU), and the "
                "ROCm tools rocblas-bench / hipblaslt-bench (GEMM only) where the image has them."
            ),
        },
        "device": {
            "type": "string",
            "enum": ["auto", "gpu", "cpu"],
            "default": "auto",
            "description": (
                "Where the torch backend runs: the GPU if torch sees one (auto), or forced."
            ),
        },
        "gpu_index": _integer(0, 0, 63, "Which GPU (torch.cuda index, the tools' --device)."),
        "precisions": {
            "type": "array",
            "items": {"type": "string", "enum": list(PRECISION_NAMES)},
            "minItems": 1,
            "uniqueItems": True,
            "default": list(PRECISION_NAMES),
            "description": (
                "GEMM precisions; each one the device or library lacks is reported with the reason."
            ),
        },
        "sizes": _int_list(
            [1024, 2048, 4096, 8192], 1, 65536, "Square GEMM sweep: m = n = k for each size."
        ),
        "transposes": {
            "type": "array",
            "items": {"type": "string", "enum": list(TRANSPOSES)},
            "minItems": 1,
            "uniqueItems": True,
            "default": ["NN"],
            "description": "Transpose pairs (A, B) for the square sweep.",
        },
        "shapes": {
            "type": "array",
            "maxItems": 256,
            "items": {
                "type": "object",
                "properties": {
                    "m": {"type": "integer", "minimum": 1, "maximum": 1 << 20},
                    "n": {"type": "integer", "minimum": 1, "maximum": 1 << 20},
                    "k": {"type": "integer", "minimum": 1, "maximum": 1 << 20},
                    "batch": {"type": "integer", "minimum": 1, "maximum": 1 << 16, "default": 1},
                    "transa": _TRANS,
                    "transb": _TRANS,
                },
                "required": ["m", "n", "k"],
                "additionalProperties": False,
            },
            "default": [],
            "description": (
                "Extra GEMM problems (m, n, k, batch for a strided-batched GEMM, transposes)."
            ),
        },
        "warmup_s": _number(
            0.2, 0, 60, "Warm-up time per case before sampling (clocks ramp, kernels load)."
        ),
        "warmup_min_calls": _integer(3, 1, 1000, "Fewest warm-up calls per case."),
        "min_reps": _integer(10, 2, 100000, "Fewest timing samples per case."),
        "max_reps": _integer(1000, 2, 1000000, "Most timing samples per case."),
        "target_cv": _number(
            0.01, 0, 1, "Stop sampling once stdev/mean of the samples is at most this."
        ),
        "cv_warn": _number(0.02, 0, 1, "Flag a case whose coefficient of variation is above this."),
        "case_budget_s": _number(
            3.0, 0.01, 3600, "Time budget for sampling one case (and the most one call may take)."
        ),
        "min_sampling_s": _number(
            0.5,
            0,
            3600,
            "Sample each case for at least this long (a sustained state, not a cold burst).",
        ),
        "min_sample_s": _number(
            0.001, 0, 10, "Each sample times enough back-to-back calls to last at least this long."
        ),
        "cold_cache": {
            "type": "boolean",
            "default": False,
            "description": (
                "Rotate through enough input sets (tools: flush "
                "buffers) that the cache cannot hold them."
            ),
        },
        "inputs": {
            "type": "string",
            "enum": list(DISTRIBUTIONS),
            "default": NORMAL,
            "description": (
                "The data the torch and numpy GEMMs are fed (throughput depends on it: "
                "bf16 zeros ran 19 % faster than normals on an H200). normal: standard "
                "normals in the operand's own precision; uniform: [-1, 1); small-int: "
                "-4..4; zeros. Tool backends use the tool's own initialisation."
            ),
        },
        "check": {
            "type": "boolean",
            "default": True,
            "description": "Check every case's output against a float64 reference.",
        },
        "corrupt_output": {
            "type": "boolean",
            "default": False,
            "description": (
                "Test of the check: damage one element of every checked output; the job must fail."
            ),
        },
        "fp8_fast_accum": {
            "type": "boolean",
            "default": False,
            "description": (
                "torch._scaled_mm use_fast_accum (faster FP8 on Hopper, less accurate sums)."
            ),
        },
        "bandwidth_mib": {
            "type": "array",
            "items": {"type": "number", "exclusiveMinimum": 0, "maximum": 65536},
            "maxItems": 16,
            "default": [1024],
            "description": "Array sizes (MiB each) for the copy and triad kernels.",
        },
        "fft_shapes": {
            "type": "array",
            "items": {
                "type": "array",
                "items": {"type": "integer", "minimum": 2, "maximum": 1 << 28},
                "minItems": 1,
                "maxItems": 3,
            },
            "maxItems": 16,
            "default": [[16777216], [4096, 4096]],
            "description": "FFT sizes: each a list of 1 to 3 dimensions (complex to complex).",
        },
        "fft_batch": _integer(1, 1, 65536, "Transforms per FFT call."),
        "fft_precisions": {
            "type": "array",
            "items": {"type": "string", "enum": ["fp32", "fp64"]},
            "minItems": 1,
            "uniqueItems": True,
            "default": ["fp32"],
            "description": "FFT precisions (complex64 / complex128).",
        },
        "solver_ops": {
            "type": "array",
            "items": {"type": "string", "enum": ["lu", "cholesky", "qr"]},
            "minItems": 1,
            "uniqueItems": True,
            "default": ["lu", "cholesky", "qr"],
            "description": "Dense factorisations to time.",
        },
        "solver_sizes": _int_list([4096], 2, 65536, "Matrix orders for the solvers."),
        "solver_precisions": {
            "type": "array",
            "items": {"type": "string", "enum": ["fp32", "fp64"]},
            "minItems": 1,
            "uniqueItems": True,
            "default": ["fp32", "fp64"],
            "description": "Solver precisions.",
        },
        "tool_repeats": _integer(
            5, 1, 1000, "Runs of rocblas-bench / hipblaslt-bench per case (samples)."
        ),
        "tool_iters": _integer(10, 1, 100000, "Hot iterations per tool run (-i)."),
        "tool_cold_iters": _integer(2, 0, 100000, "Cold iterations per tool run (-j)."),
        "tool_timeout_s": _number(300, 1, 3600, "Limit for one tool run."),
        "telemetry": {
            "type": "boolean",
            "default": True,
            "description": "Sample GPU clocks, power and temperature during the cases.",
        },
        "telemetry_interval_ms": _integer(
            100, 20, 5000, "Sampling interval (amd-smi polls at 200 ms at most)."
        ),
        "environment": {
            "type": "boolean",
            "default": True,
            "description": (
                "Fingerprint the machine with the probe "
                "(recommended: results compare like for like)."
            ),
        },
        "seed": _integer(0, 0, 2**31 - 1, "Seed of the random inputs."),
    },
    "additionalProperties": False,
}
