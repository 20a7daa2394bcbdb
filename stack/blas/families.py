"""The other library families, on the same method as GEMM.

- bandwidth: STREAM-style copy (b = a) and triad (a = b + s * c) in float32,
  bytes counted the STREAM way (2 and 3 arrays per element), against the
  device's HBM peak. The ceiling every memory-bound kernel lives under.
- fft: complex-to-complex FFTs through torch.fft (cuFFT / rocFFT / pocketfft
  on the CPU) or numpy.fft, counted as 5 N log2 N flops per transform (the
  convention of FFTW's benchmarks), plus the effective bandwidth of reading
  and writing the data once, because large FFTs are memory-bound.
- solver: dense LU (partial pivoting), Cholesky and QR through torch.linalg
  (cuSOLVER / rocSOLVER / LAPACK) or numpy/scipy; flops 2/3 n^3, 1/3 n^3 and
  4/3 n^3; checked by the reconstruction residual |A - factors| / |A|.

Each case is timed by the same adaptive loop, checked against a float64
reference and given the telemetry of its window.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from stack.blas import check
from stack.blas.bench import Bench, hbm_peak
from stack.blas.results import UNSUPPORTED, CaseResult, CheckResult
from stack.blas.stats import cpu_blocks

_U = {"fp32": 2.0**-24, "fp64": 2.0**-53}


# --------------------------------------------------------------------------
# bandwidth
# --------------------------------------------------------------------------

BANDWIDTH_OPS = ("copy", "triad")
TRIAD_SCALAR = 3.0


def bandwidth_case(bench: Bench, op: str, size_mb: float) -> CaseResult:
    """One STREAM-style kernel on arrays of size_mb MiB each (float32)."""
    n = max(1, int(size_mb * 2**20) // 4)
    arrays = 2 if op == "copy" else 3
    moved = arrays * n * 4
    peak, label = hbm_peak(bench.device)
    result = CaseResult(
        family="bandwidth",
        backend=bench.backend,
        case={
            "backend": bench.backend,
            "device": bench.device.label,
            "op": op,
            "precision": "fp32",
            "array_mib": float(size_mb),
            "elements": n,
        },
        work=float(moved),
        rate_unit="GB/s",
        rate_scale=1e9,
        peak=peak,
        peak_label=label,
        footprint_bytes=arrays * n * 4,
    )
    cache = bench.device.l2_bytes
    if cache and n * 4 < 4 * cache:
        result.notes.append(
            f"arrays of {n * 4 / 2**20:.1f} MiB are within 4x the cache ({cache / 2**20:.0f} MiB): "
            "this measures cache, not memory bandwidth"
        )
    if bench.refused(result, None, int(1.3 * (arrays + 1) * n * 4)):
        return result
    try:
        if bench.backend == "torch":
            _bandwidth_torch(bench, result, op, n)
        else:
            _bandwidth_numpy(bench, result, op, n)
    except Exception as exc:  # reported per case
        return bench.fail(result, exc)
    if bench.backend == "numpy" and op == "triad":
        result.notes.append(
            "numpy's triad takes two passes (multiply, then add in place); bytes are counted "
            "the STREAM way (3 arrays), so this understates the hardware"
        )
    return bench.finish(result, "fp32")


def _bandwidth_torch(bench: Bench, result: CaseResult, op: str, n: int) -> None:
    torch = bench.torch
    bench.release()
    gen = torch.Generator(device=bench.device.label).manual_seed(bench.seed + n)
    target = torch.device(bench.device.label)
    a = torch.randn(n, generator=gen, device=target)
    b = torch.randn(n, generator=gen, device=target)
    if op == "copy":

        def call() -> Any:
            return b.copy_(a)

    else:
        c = torch.randn(n, generator=gen, device=target)

        def call() -> Any:
            return torch.add(b, c, alpha=TRIAD_SCALAR, out=a)

    result.timing = bench.measure_torch([call])
    if not bench.check:
        return
    call()
    bench.synchronize()
    got = b if op == "copy" else a
    if bench.corrupt:
        bench.damage(result, got)
    if op == "copy":
        ref = a
        tolerance = 0.0
    else:
        ref = b.double() + TRIAD_SCALAR * c.double()
        tolerance = 4 * _U["fp32"] * (1 + TRIAD_SCALAR)
    result.check = check.relative_check_torch(torch, got, ref, tolerance)


def _bandwidth_numpy(bench: Bench, result: CaseResult, op: str, n: int) -> None:
    np = bench.np
    rng = np.random.default_rng(bench.seed + n)
    a = rng.standard_normal(n, dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    if op == "copy":

        def call() -> Any:
            np.copyto(b, a)

    else:
        c = rng.standard_normal(n, dtype=np.float32)

        def call() -> Any:
            np.multiply(c, np.float32(TRIAD_SCALAR), out=a)
            np.add(a, b, out=a)

    result.timing = bench.measure(cpu_blocks(call))
    if not bench.check:
        return
    call()
    got = b if op == "copy" else a
    if bench.corrupt:
        bench.damage(result, got)
    if op == "copy":
        result.check = check.relative_check_numpy(np, got, a, 0.0)
    else:
        ref = b.astype(np.float64) + TRIAD_SCALAR * c.astype(np.float64)
        result.check = check.relative_check_numpy(np, got, ref, 4 * _U["fp32"] * (1 + TRIAD_SCALAR))


# --------------------------------------------------------------------------
# FFT
# --------------------------------------------------------------------------


def fft_case(bench: Bench, shape: list[int], batch: int, precision: str) -> CaseResult:
    """A batched complex-to-complex FFT over all dimensions of ``shape``."""
    points = math.prod(shape)
    itemsize = 8 if precision == "fp32" else 16
    flops = 5.0 * points * math.log2(max(points, 2)) * batch
    result = CaseResult(
        family="fft",
        backend=bench.backend,
        case={
            "backend": bench.backend,
            "device": bench.device.label,
            "precision": precision,
            "shape": "x".join(str(s) for s in shape),
            "dims": len(shape),
            "batch": batch,
        },
        work=flops,
        footprint_bytes=2 * points * batch * itemsize,
    )
    result.extra["bytes_per_call"] = 2 * points * batch * itemsize
    hbm, _label = hbm_peak(bench.device)
    if hbm:
        result.extra["hbm_peak_gbps"] = hbm
    if bench.refused(result, precision, int(6 * points * batch * itemsize)):
        return result
    tolerance = 32 * _U[precision] * max(math.log2(max(points, 2)), 1.0)
    full = (batch, *shape) if batch > 1 else tuple(shape)
    dims = tuple(range(-len(shape), 0))
    try:
        if bench.backend == "torch":
            _fft_torch(bench, result, full, dims, precision, tolerance, bench.seed + points)
        else:
            _fft_numpy(bench, result, full, dims, precision, tolerance, bench.seed + points)
    except Exception as exc:  # reported per case
        return bench.fail(result, exc)
    return bench.finish(result, precision)


def _fft_torch(
    bench: Bench,
    result: CaseResult,
    full: tuple[int, ...],
    dims: tuple[int, ...],
    precision: str,
    tolerance: float,
    seed: int,
) -> None:
    torch = bench.torch
    bench.release()
    gen = torch.Generator(device=bench.device.label).manual_seed(seed)
    dtype = torch.complex64 if precision == "fp32" else torch.complex128
    real = torch.float32 if precision == "fp32" else torch.float64
    target = torch.device(bench.device.label)
    x = torch.complex(
        torch.randn(full, generator=gen, device=target, dtype=real),
        torch.randn(full, generator=gen, device=target, dtype=real),
    ).to(dtype)
    fftn = torch.fft.fftn
    result.timing = bench.measure_torch([lambda: fftn(x, dim=dims)])
    if not bench.check:
        return
    got = fftn(x, dim=dims)
    if bench.corrupt:
        bench.damage(result, got.view(real))
    if precision == "fp32":
        ref = fftn(x.to(torch.complex128), dim=dims)
        result.check = check.relative_check_torch(torch, got, ref, tolerance)
    else:
        # an FP64 reference would be the very transform under test: check
        # the round trip through the inverse transform instead
        back = torch.fft.ifftn(got, dim=dims)
        result.check = check.relative_check_torch(torch, back, x, tolerance, "roundtrip")


def _fft_numpy(
    bench: Bench,
    result: CaseResult,
    full: tuple[int, ...],
    dims: tuple[int, ...],
    precision: str,
    tolerance: float,
    seed: int,
) -> None:
    np = bench.np
    rng = np.random.default_rng(seed)
    real = np.float32 if precision == "fp32" else np.float64
    x = rng.standard_normal(full, dtype=real) + 1j * rng.standard_normal(full, dtype=real)
    x = x.astype(np.complex64 if precision == "fp32" else np.complex128)
    fftn = np.fft.fftn
    result.timing = bench.measure(cpu_blocks(lambda: fftn(x, axes=dims)))
    got = fftn(x, axes=dims)
    if got.dtype != x.dtype:
        result.notes.append(f"numpy.fft computed in {got.dtype} for {x.dtype} input")
    if not bench.check:
        return
    if bench.corrupt:
        bench.damage(result, got)
    if precision == "fp32":
        ref = fftn(x.astype(np.complex128), axes=dims)
        result.check = check.relative_check_numpy(np, got, ref, tolerance)
    else:
        back = np.fft.ifftn(got, axes=dims)
        result.check = check.relative_check_numpy(np, back, x, tolerance, "roundtrip")


# --------------------------------------------------------------------------
# Dense solvers
# --------------------------------------------------------------------------

SOLVER_OPS = ("lu", "cholesky", "qr")
SOLVER_FLOPS = {"lu": 2.0 / 3.0, "cholesky": 1.0 / 3.0, "qr": 4.0 / 3.0}


def solver_case(bench: Bench, op: str, n: int, precision: str) -> CaseResult:
    """One dense factorisation of an n x n matrix."""
    itemsize = 4 if precision == "fp32" else 8
    flops = SOLVER_FLOPS[op] * n**3
    peak = bench.device.peaks.peak(precision)
    result = CaseResult(
        family="solver",
        backend=bench.backend,
        case={
            "backend": bench.backend,
            "device": bench.device.label,
            "op": op,
            "precision": precision,
            "n": n,
        },
        work=flops,
        peak=peak,
        peak_label=(
            f"{bench.device.peaks.gpu} {precision.upper()} dense {peak:g} TFLOP/s (GEMM peak)"
            if peak is not None
            else None
        ),
        footprint_bytes=2 * n * n * itemsize,
    )
    if bench.backend == "numpy" and op == "lu":
        try:
            import scipy.linalg  # noqa: F401
        except ImportError:
            result.status = UNSUPPORTED
            result.reason = (
                "numpy has no LU factorisation (scipy.linalg.lu_factor does; "
                "scipy is not installed)"
            )
            return result
    if bench.refused(result, f"{op}-{precision}", int(6 * n * n * itemsize)):
        return result
    tolerance = 2 * n * _U[precision]
    try:
        if bench.backend == "torch":
            _solver_torch(bench, result, op, n, precision, tolerance)
        else:
            _solver_numpy(bench, result, op, n, precision, tolerance)
    except Exception as exc:  # reported per case
        return bench.fail(result, exc)
    return bench.finish(result, f"{op}-{precision}")


def _residual(norm: Callable[[Any], float], a: Any, rebuilt: Any, tolerance: float) -> CheckResult:
    denominator = norm(a) or 1.0
    error = norm(rebuilt - a) / denominator
    if math.isnan(error):
        error = math.inf
    passed = error <= tolerance
    detail = "" if passed else f"|A - factors| / |A| = {error:.3g} > {tolerance:.3g}"
    return CheckResult(passed, error, tolerance, "reconstruction", 0, detail)


def _solver_torch(
    bench: Bench, result: CaseResult, op: str, n: int, precision: str, tol: float
) -> None:
    torch = bench.torch
    bench.release()
    dtype = torch.float32 if precision == "fp32" else torch.float64
    target = torch.device(bench.device.label)
    gen = torch.Generator(device=bench.device.label).manual_seed(bench.seed + n)
    a = torch.randn((n, n), generator=gen, device=target, dtype=dtype)
    if op == "cholesky":
        a = a @ a.T / n + torch.eye(n, device=target, dtype=dtype)
    linalg = torch.linalg
    if op == "lu":

        def call() -> Any:
            return linalg.lu_factor_ex(a)

    elif op == "cholesky":

        def call() -> Any:
            return linalg.cholesky_ex(a)

    else:

        def call() -> Any:
            return linalg.qr(a)

    result.timing = bench.measure_torch([call])
    if not bench.check:
        return
    outputs = call()
    factor = outputs[0]
    if bench.corrupt:
        bench.damage(result, factor, "factor")
    if op == "lu":
        p, lower, upper = torch.lu_unpack(factor, outputs[1])
        rebuilt = p @ lower @ upper
    elif op == "cholesky":
        rebuilt = factor @ factor.mT
    else:
        rebuilt = factor @ outputs[1]

    def norm(x: Any) -> float:
        return float(torch.linalg.matrix_norm(x.double()).item())

    result.check = _residual(norm, a, rebuilt, tol)


def _solver_numpy(
    bench: Bench, result: CaseResult, op: str, n: int, precision: str, tol: float
) -> None:
    np = bench.np
    rng = np.random.default_rng(bench.seed + n)
    dtype = np.float32 if precision == "fp32" else np.float64
    a = rng.standard_normal((n, n)).astype(dtype)
    if op == "cholesky":
        a = (a @ a.T / n + np.eye(n, dtype=dtype)).astype(dtype)
    if op == "lu":
        import scipy.linalg

        def call() -> Any:
            return scipy.linalg.lu_factor(a, check_finite=False)

    elif op == "cholesky":

        def call() -> Any:
            return (np.linalg.cholesky(a),)

    else:

        def call() -> Any:
            return np.linalg.qr(a)

    result.timing = bench.measure(cpu_blocks(call))
    if not bench.check:
        return
    outputs = call()
    factor = np.array(outputs[0])
    if bench.corrupt:
        bench.damage(result, factor, "factor")
    if op == "lu":
        lower = np.tril(factor, -1) + np.eye(n, dtype=factor.dtype)
        upper = np.triu(factor)
        rebuilt = lower @ upper
        perm = np.arange(n)
        for i, pivot in enumerate(outputs[1]):
            perm[i], perm[pivot] = perm[pivot], perm[i]
        rebuilt_rows = np.empty_like(rebuilt)
        rebuilt_rows[perm] = rebuilt
        rebuilt = rebuilt_rows
    elif op == "cholesky":
        rebuilt = factor @ factor.T
    else:
        rebuilt = factor @ outputs[1]

    def norm(x: Any) -> float:
        return float(np.linalg.norm(np.asarray(x, dtype=np.float64)))

    result.check = _residual(norm, a, rebuilt, tol)
