"""GEMM through PyTorch: torch.matmul, torch._scaled_mm (FP8), torch._int_mm (INT8).

On a CUDA build these reach cuBLAS / cuBLASLt, on a ROCm build rocBLAS /
hipBLASLt, on the CPU oneDNN / MKL / OpenBLAS: the same Python measures all
three, which is what makes a cross-vendor comparison fair.

Everything takes the torch module as an argument; nothing heavy is imported
at module level.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from stack.blas.cases import GemmCase
from stack.blas.devices import Device
from stack.blas.inputs import NORMAL, torch_operand

_DTYPES = {
    "fp64": "float64",
    "fp32": "float32",
    "tf32": "float32",
    "fp16": "float16",
    "bf16": "bfloat16",
}


def fp8_dtype(torch: Any, device: Device) -> Any:
    """The E4M3 flavour the device's matrix units take (FNUZ on AMD gfx942, OCP elsewhere)."""
    if device.vendor == "amd" and (device.arch or "").startswith("gfx94"):
        return torch.float8_e4m3fnuz
    return torch.float8_e4m3fn


def input_dtype(torch: Any, device: Device, precision: str) -> Any:
    """The torch dtype of A and B for a precision."""
    if precision == "fp8":
        return fp8_dtype(torch, device)
    if precision == "int8":
        return torch.int8
    return getattr(torch, _DTYPES[precision])


def _capability(torch: Any, device: Device) -> tuple[int, int] | None:
    if device.kind != "cuda" or device.vendor != "nvidia":
        return None
    return tuple(torch.cuda.get_device_capability(device.index))  # type: ignore[return-value]


def static_unsupported(torch: Any, device: Device, precision: str) -> str | None:
    """Why a precision cannot run on this device at all (None if it should)."""
    cap = _capability(torch, device)
    arch = device.arch or ""
    if precision == "tf32":
        if device.kind == "cpu":
            return (
                "TF32 is a mode of GPU matrix units (NVIDIA Ampere+, AMD gfx942 XF32); "
                "PyTorch on the CPU computes float32 matmul in full precision"
            )
        if cap is not None and cap < (8, 0):
            return f"TF32 tensor cores need NVIDIA sm_80 or newer; this GPU is {arch}"
        if device.vendor == "amd" and not arch.startswith("gfx94"):
            return (
                f"{arch} has no XF32/TF32 matrix path (only gfx942, the MI300 series, has "
                "one; gfx950 dropped it)"
            )
    if precision == "bf16" and cap is not None and cap < (8, 0):
        return f"BF16 tensor cores need NVIDIA sm_80 or newer; this GPU is {arch}"
    if precision == "fp8":
        if not hasattr(torch, "_scaled_mm") or not hasattr(torch, "float8_e4m3fn"):
            return f"torch {torch.__version__} has no torch._scaled_mm / float8 dtypes"
        if cap is not None and cap < (8, 9):
            return f"FP8 tensor cores need NVIDIA sm_89 (Ada) or sm_90 (Hopper); this GPU is {arch}"
        if device.vendor == "amd" and not (arch.startswith(("gfx94", "gfx95", "gfx12"))):
            return f"{arch} has no FP8 matrix instructions (gfx942, gfx950 and gfx12 do)"
    if precision == "int8" and not hasattr(torch, "_int_mm"):
        return f"torch {torch.__version__} has no torch._int_mm"
    return None


def shape_unsupported(case: GemmCase) -> str | None:
    """Why this shape cannot run through the torch entry point of its precision."""
    if case.precision in ("fp8", "int8") and case.batch > 1:
        entry = "torch._scaled_mm" if case.precision == "fp8" else "torch._int_mm"
        return (
            f"{entry} takes 2-D matrices only: PyTorch has no batched {case.precision.upper()} GEMM"
        )
    if case.precision == "fp8" and (case.k % 16 or case.n % 16):
        return "torch._scaled_mm needs k and n to be multiples of 16"
    if case.precision == "int8" and (case.k % 8 or case.n % 8 or case.m <= 16):
        return "torch._int_mm needs m > 16 and k, n multiples of 8"
    return None


def effective_layout(case: GemmCase) -> tuple[str, str, str | None]:
    """The transposes torch will really run, and a note when they differ from the request.

    torch._scaled_mm accepts only A row-major and B column-major ("NT" in this
    module's convention), so FP8 cases run that layout whatever was asked.
    """
    if case.precision == "fp8" and (case.transa, case.transb) != ("N", "T"):
        return (
            "N",
            "T",
            "torch._scaled_mm takes A row-major and B column-major only: ran NT "
            f"instead of {case.transa}{case.transb}",
        )
    return case.transa, case.transb, None


@contextlib.contextmanager
def matmul_precision(torch: Any, precision: str) -> Iterator[None]:
    """Allow TF32 only inside a TF32 case, and force full FP32 everywhere else.

    ``set_float32_matmul_precision("high")`` is the switch that works on CUDA
    and ROCm builds alike; whether the library then really used TF32 shows in
    the measured error and speed (the runner flags a TF32 case whose error
    looks like full FP32).
    """
    previous = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("high" if precision == "tf32" else "highest")
        yield
    finally:
        torch.set_float32_matmul_precision(previous)


@dataclass
class Operands:
    """One set of inputs: the logical operands as the GEMM sees them."""

    a: Any
    b: Any
    scale_a: Any = None
    scale_b: Any = None


def make_operands(
    torch: Any,
    device: Device,
    case: GemmCase,
    transa: str,
    transb: str,
    generator: Any,
    inputs: str = NORMAL,
) -> Operands:
    """Inputs of the case's precision and layout, drawn as ``inputs`` says (stack.blas.inputs)."""
    target = torch.device(device.label)
    dtype = input_dtype(torch, device, case.precision)
    lead = (case.batch,) if case.batch > 1 else ()

    def operand(rows: int, cols: int, trans: str) -> Any:
        shape = (*lead, cols, rows) if trans == "T" else (*lead, rows, cols)
        stored = torch_operand(torch, shape, dtype, inputs, generator, target)
        return stored.transpose(-1, -2) if trans == "T" else stored

    a = operand(case.m, case.k, transa)
    b = operand(case.k, case.n, transb)
    ops = Operands(a=a, b=b)
    if case.precision == "fp8":
        ops.scale_a = torch.ones((), device=target, dtype=torch.float32)
        ops.scale_b = torch.ones((), device=target, dtype=torch.float32)
    return ops


def gemm_call(
    torch: Any, precision: str, ops: Operands, fast_accum: bool = False
) -> Callable[[], Any]:
    """A no-argument function that runs the GEMM once and returns C."""
    a, b = ops.a, ops.b
    if precision == "fp8":
        scaled_mm = torch._scaled_mm
        sa, sb = ops.scale_a, ops.scale_b
        out_dtype = torch.bfloat16

        def run_fp8() -> Any:
            return scaled_mm(
                a, b, scale_a=sa, scale_b=sb, out_dtype=out_dtype, use_fast_accum=fast_accum
            )

        return run_fp8
    if precision == "int8":
        int_mm = torch._int_mm
        return lambda: int_mm(a, b)
    matmul = torch.matmul
    return lambda: matmul(a, b)


def trial(torch: Any, device: Device, precision: str, generator: Any) -> str | None:
    """Run a tiny GEMM of the precision; the exception text if the stack refuses it."""
    tiny = GemmCase(precision, 64, 64, 64, 1, "N", "T" if precision == "fp8" else "N")
    try:
        with matmul_precision(torch, precision):
            ops = make_operands(torch, device, tiny, tiny.transa, tiny.transb, generator)
            out = gemm_call(torch, precision, ops)()
            if device.kind == "cuda":
                torch.cuda.synchronize(device.index)
        del out
    except Exception as exc:  # whatever the library says is the reason
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return f"a 64x64x64 trial call failed: {type(exc).__name__}: {text[:300]}"
    return None


def library_name(torch: Any, device: Device) -> str:
    """Which BLAS torch.matmul reaches here (best effort, for the summary)."""
    if device.kind == "cpu":
        config = ""
        with contextlib.suppress(Exception):
            config = torch.__config__.show()
        if "mkl" in config.lower() and "USE_MKL=ON" in config:
            return "MKL"
        if "openblas" in config.lower():
            return "OpenBLAS"
        return "oneDNN/BLAS (CPU)"
    preferred = None
    with contextlib.suppress(Exception):
        preferred = str(torch.backends.cuda.preferred_blas_library())
    if device.torch_backend == "rocm":
        return f"rocBLAS/hipBLASLt ({preferred})" if preferred else "rocBLAS/hipBLASLt"
    return f"cuBLAS/cuBLASLt ({preferred})" if preferred else "cuBLAS/cuBLASLt"
