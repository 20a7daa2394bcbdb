"""Correctness checks: is the output right, within what its precision allows?

A fast wrong answer is worse than a slow right one, so every case's output
is compared with a float64 reference computed from the same inputs (see
precisions.py for the GEMM scale and tolerances). Where the full reference
would cost too much (a huge GEMM on a CPU) the check covers a sample of
rows: the rows holding the largest output magnitudes (where a garbage value
shows up), the first and last rows and random ones. Non-finite values are
always counted over the whole output.

``corrupt_*`` deliberately damage one element of an output; the job's
``corrupt_output`` parameter uses them to prove, on the real code path, that
the check catches a wrong result.
"""

from __future__ import annotations

import itertools
from typing import Any

from stack.blas.results import CheckResult

SAMPLED_ROWS = 64


def _sample_rows(np: Any, row_peaks: Any, m: int, seed: int) -> Any:
    """Row indices to check when the full reference is too expensive."""
    rng = np.random.default_rng(seed)
    wanted = {0, m - 1}
    order = np.argsort(row_peaks)[::-1]
    wanted.update(int(i) for i in order[:8])
    extra = rng.choice(m, size=min(m, SAMPLED_ROWS), replace=False)
    for i in extra:
        if len(wanted) >= SAMPLED_ROWS:
            break
        wanted.add(int(i))
    return np.array(sorted(wanted))


# --------------------------------------------------------------------------
# torch
# --------------------------------------------------------------------------


def _reference_matmul(matmul: Any, a64: Any, b64: Any, split: bool) -> Any:
    """float64 A @ B; split along k into uneven chunks when the GEMM under test was FP64.

    An FP64 result checked against the same library's FP64 GEMM on the same
    shape would be compared with itself. Summing three products of different
    inner sizes runs other kernels in another accumulation order, so the
    reference no longer shares the tested code path. ``matmul`` is
    torch.matmul or np.matmul.
    """
    k = a64.shape[-1]
    if not split or k < 3:
        return matmul(a64, b64)
    cuts = [0, k // 3, k // 3 + (k - k // 3) // 2 + 1, k]
    ref = None
    for lo, hi in itertools.pairwise(cuts):
        if hi <= lo:
            continue
        part = matmul(a64[..., lo:hi], b64[..., lo:hi, :])
        if ref is None:
            ref = part
        else:
            ref += part
    return ref


def _float64_torch(torch: Any, x: Any) -> Any:
    """A float64 copy of ``x``, exact for every checked type.

    FP8 and INT8 go by float32, the cast every torch build with FP8 has.
    """
    return x.to(torch.float32).to(torch.float64) if x.element_size() == 1 else x.to(torch.float64)


def _rows_torch(torch: Any, x: Any, index: Any) -> Any:
    """Rows ``index`` (dim -2) of ``x``.

    FP8 rows are gathered as bytes: index_select has GPU kernels for FP8 only
    in recent torch releases, and a byte copy is exact.
    """
    if x.element_size() == 1 and x.is_floating_point():
        return x.view(torch.uint8).index_select(-2, index).view(x.dtype)
    return x.index_select(-2, index)


def gemm_check_torch(
    torch: Any,
    out: Any,
    a: Any,
    b: Any,
    tolerance: float,
    *,
    full: bool,
    seed: int = 0,
) -> CheckResult:
    """Check C = op(A) @ op(B) (tensors, possibly batched) against float64.

    ``a`` and ``b`` are the logical operands exactly as the GEMM saw them
    (views included); FP8 and INT8 are upcast exactly. The sampled check picks
    its rows before upcasting: it is chosen when float64 copies of the whole
    matrices would not fit.
    """
    import numpy as np

    nonfinite = int((~torch.isfinite(out)).sum().item())
    b64 = _float64_torch(torch, b)
    independent = a.dtype == torch.float64
    if full:
        a64 = _float64_torch(torch, a)
        got = _float64_torch(torch, out)
        mode = "full"
    else:
        peaks_by_row = out.abs().amax(dim=-1)
        while peaks_by_row.dim() > 1:
            peaks_by_row = peaks_by_row.amax(dim=0)
        rows = _sample_rows(np, peaks_by_row.float().cpu().numpy(), out.shape[-2], seed)
        index = torch.as_tensor(rows, device=out.device)
        a64 = _float64_torch(torch, _rows_torch(torch, a, index))
        got = _float64_torch(torch, out.index_select(-2, index))
        mode = f"rows:{len(rows)}"
    ref = _reference_matmul(torch.matmul, a64, b64, independent)
    row_norms = torch.linalg.vector_norm(a64, dim=-1)
    col_norms = torch.linalg.vector_norm(b64, dim=-2)
    scale = (row_norms.unsqueeze(-1) * col_norms.unsqueeze(-2)).clamp_min(1e-300)
    diff = (got - ref).abs_().div_(scale)
    diff = torch.nan_to_num(diff, nan=float("inf"))
    error = float(diff.max().item()) if diff.numel() else 0.0
    passed = nonfinite == 0 and error <= tolerance
    detail = ""
    if not passed:
        flat = int(torch.argmax(diff.reshape(-1)).item()) if diff.numel() else 0
        detail = (
            f"worst element at flat index {flat} of the checked region: normalised error "
            f"{error:.3g} > tolerance {tolerance:.3g}"
            if nonfinite == 0
            else f"{nonfinite} non-finite output value(s)"
        )
    return CheckResult(passed, error, tolerance, mode, nonfinite, detail)


def corrupt_torch(torch: Any, out: Any, seed: int = 0) -> str:
    """Damage one element of ``out`` in place: value + 4 * max|out| + 1. Returns where."""
    import numpy as np

    gen = torch.Generator(device="cpu").manual_seed(seed + 7919)
    flat_index = int(torch.randint(0, out.numel(), (1,), generator=gen).item())
    where = tuple(int(i) for i in np.unravel_index(flat_index, tuple(out.shape)))
    if out.is_floating_point():
        biggest = float(out.abs().max().item())
        out[where] = float(out[where].item()) + 4 * biggest + 1
    else:
        biggest = int(out.abs().max().item())
        info = torch.iinfo(out.dtype)
        out[where] = max(info.min, min(info.max, int(out[where].item()) + 4 * biggest + 1))
    return f"element {list(where)}"


def relative_check_torch(
    torch: Any, got: Any, ref: Any, tolerance: float, label: str = "full"
) -> CheckResult:
    """max |got - ref| / rms(ref): for FFTs and element-wise kernels."""
    got64 = got.to(torch.complex128) if got.is_complex() else got.to(torch.float64)
    ref64 = ref.to(torch.complex128) if ref.is_complex() else ref.to(torch.float64)
    nonfinite = int((~torch.isfinite(got64)).sum().item())
    rms = float(ref64.abs().pow(2).mean().sqrt().item()) or 1.0
    diff = torch.nan_to_num((got64 - ref64).abs(), nan=float("inf"))
    error = float(diff.max().item()) / rms if diff.numel() else 0.0
    passed = nonfinite == 0 and error <= tolerance
    detail = "" if passed else f"max |error| / rms(reference) = {error:.3g} > {tolerance:.3g}"
    return CheckResult(passed, error, tolerance, label, nonfinite, detail)


# --------------------------------------------------------------------------
# numpy
# --------------------------------------------------------------------------


def gemm_check_numpy(
    np: Any,
    out: Any,
    a: Any,
    b: Any,
    tolerance: float,
    *,
    full: bool,
    seed: int = 0,
) -> CheckResult:
    """The numpy twin of gemm_check_torch."""
    nonfinite = int((~np.isfinite(out)).sum())
    b64 = b.astype(np.float64)
    split = a.dtype == np.float64
    if full:
        a64 = a.astype(np.float64)
        got = out.astype(np.float64)
        mode = "full"
    else:
        peaks_by_row = np.abs(out).max(axis=-1)
        while peaks_by_row.ndim > 1:
            peaks_by_row = peaks_by_row.max(axis=0)
        # float64 peaks: argsort may order ties differently for another dtype
        rows = _sample_rows(np, peaks_by_row.astype(np.float64), out.shape[-2], seed)
        a64 = np.take(a, rows, axis=-2).astype(np.float64)
        got = np.take(out, rows, axis=-2).astype(np.float64)
        mode = f"rows:{len(rows)}"
    ref = _reference_matmul(np.matmul, a64, b64, split)
    row_norms = np.linalg.norm(a64, axis=-1)
    col_norms = np.linalg.norm(b64, axis=-2)
    scale = np.maximum(row_norms[..., :, None] * col_norms[..., None, :], 1e-300)
    with np.errstate(invalid="ignore"):
        diff = np.nan_to_num(np.abs(got - ref) / scale, nan=np.inf)
    error = float(diff.max()) if diff.size else 0.0
    passed = nonfinite == 0 and error <= tolerance
    detail = ""
    if not passed:
        detail = (
            f"normalised error {error:.3g} > tolerance {tolerance:.3g}"
            if nonfinite == 0
            else f"{nonfinite} non-finite output value(s)"
        )
    return CheckResult(passed, error, tolerance, mode, nonfinite, detail)


def corrupt_numpy(np: Any, out: Any, seed: int = 0) -> str:
    """Damage one element of ``out`` in place: value + 4 * max|out| + 1. Returns where."""
    rng = np.random.default_rng(seed + 7919)
    flat_index = int(rng.integers(0, out.size))
    where = tuple(int(i) for i in np.unravel_index(flat_index, out.shape))
    biggest = float(np.abs(out).max()) if out.size else 0.0
    out[where] = out[where] + 4 * biggest + 1
    return f"element {list(where)}"


def relative_check_numpy(
    np: Any, got: Any, ref: Any, tolerance: float, label: str = "full"
) -> CheckResult:
    """max |got - ref| / rms(ref) in numpy."""
    nonfinite = int((~np.isfinite(got)).sum())
    ref64 = ref.astype(np.complex128 if np.iscomplexobj(ref) else np.float64)
    rms = float(np.sqrt(np.mean(np.abs(ref64) ** 2))) or 1.0
    with np.errstate(invalid="ignore"):
        diff = np.nan_to_num(np.abs(got.astype(ref64.dtype) - ref64), nan=np.inf)
    error = float(diff.max()) / rms if diff.size else 0.0
    passed = nonfinite == 0 and error <= tolerance
    detail = "" if passed else f"max |error| / rms(reference) = {error:.3g} > {tolerance:.3g}"
    return CheckResult(passed, error, tolerance, label, nonfinite, detail)
