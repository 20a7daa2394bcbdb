"""The params schema of the profile kind (JSON Schema, every field defaulted), and its tools.

Plain data, so that the registry imports it for nothing. Limits here are what makes sense
for a profile; the server's caps (Kind.param_caps) bound the timeouts and the trace size
by what this installation gives one job.
"""

from __future__ import annotations

from typing import Any

WORKLOADS = ("gemm", "transformer", "script")
DTYPES = ("fp64", "fp32", "fp16", "bf16")
PROFILERS = ("torch", "ncu", "rocprofv3")
DEVICES = ("auto", "cpu")

NCU = "ncu"
ROCPROFV3 = "rocprofv3"

INSTALL_HINTS: dict[str, str] = {
    NCU: (
        "NVIDIA Nsight Compute: part of the CUDA toolkit (nvidia/cuda *-devel images, "
        "/usr/local/cuda/bin/ncu) or the 'nsight-compute' package of NVIDIA's repository"
    ),
    ROCPROFV3: (
        "ROCm's rocprofiler-sdk: /opt/rocm/bin/rocprofv3 in the rocm/dev-ubuntu-* and "
        "rocm/pytorch images (ROCm 6.2 and later)"
    ),
}

MIB = 1024 * 1024


def _integer(default: int, minimum: int, maximum: int, description: str) -> dict[str, Any]:
    return {
        "type": "integer",
        "minimum": minimum,
        "maximum": maximum,
        "default": default,
        "description": description,
    }


PARAMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "workload": {
            "type": "string",
            "enum": list(WORKLOADS),
            "default": "gemm",
            "description": (
                "gemm: torch.matmul of m x k by k x n; transformer: one pre-norm transformer "
                "block in plain PyTorch (attention and MLP), forward only; script: a Python "
                "file of the project's source tree, run once"
            ),
        },
        "m": _integer(4096, 1, 65536, "GEMM rows of A and C"),
        "n": _integer(4096, 1, 65536, "GEMM columns of B and C"),
        "k": _integer(4096, 1, 65536, "GEMM inner size"),
        "dtype": {
            "type": "string",
            "enum": list(DTYPES),
            "default": "bf16",
            "description": "element type of the GEMM or the transformer block",
        },
        "batch": _integer(8, 1, 1024, "transformer: sequences per step"),
        "seq_len": _integer(512, 1, 32768, "transformer: tokens per sequence"),
        "d_model": _integer(1024, 8, 16384, "transformer: model width"),
        "heads": _integer(16, 1, 256, "transformer: attention heads (must divide d_model)"),
        "iterations": _integer(20, 1, 1000, "profiled steps of a built-in workload"),
        "warmup": _integer(5, 0, 100, "steps run before profiling starts"),
        "script": {
            "type": "string",
            "maxLength": 512,
            "default": "",
            "description": "script workload: a .py file's path inside the project's source tree",
        },
        "script_args": {
            "type": "array",
            "items": {"type": "string", "maxLength": 256},
            "maxItems": 32,
            "default": [],
            "description": "script workload: its command-line arguments",
        },
        "profilers": {
            "type": "array",
            "items": {"type": "string", "enum": list(PROFILERS)},
            "uniqueItems": True,
            "minItems": 1,
            "default": list(PROFILERS),
            "description": (
                "which to try; each runs only where it can (ncu: on PATH and an NVIDIA GPU; "
                "rocprofv3: on PATH and an AMD GPU) and the summary says why one did not"
            ),
        },
        "device": {
            "type": "string",
            "enum": list(DEVICES),
            "default": "auto",
            "description": "auto: the GPU when PyTorch sees one, else the CPU; cpu: the CPU",
        },
        "record_shapes": {
            "type": "boolean",
            "default": True,
            "description": (
                "the PyTorch profiler records operators' input shapes, so the profile "
                "lists the GEMM shapes the workload ran (to replay with blas-bench)"
            ),
        },
        "top": _integer(20, 1, 200, "kernels kept in the table and as measurements"),
        "ncu_max_kernels": _integer(
            500, 1, 100000, "kernel launches Nsight Compute profiles at most (--launch-count)"
        ),
        "workload_timeout_s": _integer(900, 10, 86400, "one run of the workload"),
        "profiler_timeout_s": _integer(
            1800, 10, 86400, "one run under ncu or rocprofv3 (counters replay each kernel)"
        ),
        "trace_max_bytes": _integer(
            16 * MIB, 64 * 1024, 1024 * MIB, "the Chrome trace kept is trimmed to this size"
        ),
        "environment": {
            "type": "boolean",
            "default": True,
            "description": "fingerprint the machine with the probe's code, as blas-bench does",
        },
    },
    "additionalProperties": False,
}
