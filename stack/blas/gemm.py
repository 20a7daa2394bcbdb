"""GEMM cases on each backend: torch, numpy, rocblas-bench, hipblaslt-bench.

Each function takes the Bench of its backend and one GemmCase and returns a
CaseResult: measured (with samples, check, telemetry), unsupported (with the
reason), skipped (too big or too slow for this device and budget) or error.
"""

from __future__ import annotations

import dataclasses
import statistics
from typing import Any

from stack.blas import blas_tools, check, gemm_numpy, gemm_torch
from stack.blas.bench import Bench, peak_for, rotate
from stack.blas.cases import GemmCase
from stack.blas.inputs import NORMAL, TOOL_DEFAULT
from stack.blas.precisions import get as get_precision
from stack.blas.results import ERROR, SKIPPED, UNSUPPORTED, CaseResult, CheckResult
from stack.blas.stats import Timing, cpu_blocks

FAMILY = "gemm"

# Above this many multiply-adds the reference is computed for sampled rows only.
FULL_CHECK_MACS = {"cuda": 2**40, "cpu": 2**30}


def _base(
    bench: Bench, case: GemmCase, transa: str | None = None, transb: str | None = None
) -> CaseResult:
    precision = get_precision(case.precision)
    effective = dataclasses.replace(
        case, transa=transa or case.transa, transb=transb or case.transb
    )
    peak, label = peak_for(bench.device, case.precision)
    return CaseResult(
        family=FAMILY,
        backend=bench.backend,
        case=effective.as_case(
            bench.backend,
            bench.device.label,
            bool(bench.params.get("cold_cache")),
            _inputs(bench),
        ),
        work=float(case.flops),
        rate_unit=precision.unit,
        peak=peak,
        peak_label=label,
        footprint_bytes=precision.footprint_bytes(case.m, case.n, case.k, case.batch),
    )


def _inputs(bench: Bench) -> str:
    """The data a case is fed: the inputs parameter, or the tool's own for a tool backend."""
    if bench.backend in ("torch", "numpy"):
        return bench.params.get("inputs", NORMAL)
    return TOOL_DEFAULT


def _check_fits(bench: Bench, case: GemmCase) -> bool:
    macs = case.m * case.n * case.k * case.batch
    if macs > FULL_CHECK_MACS[bench.device.kind]:
        return False
    fp64_bytes = 8 * case.batch * (case.m * case.k + case.k * case.n + 4 * case.m * case.n)
    free = bench.free_bytes()
    return free is None or fp64_bytes < 0.6 * free


# --------------------------------------------------------------------------
# torch
# --------------------------------------------------------------------------


def unsupported_torch(bench: Bench, precision: str, trials: dict[str, str | None]) -> str | None:
    """Why the torch backend cannot run the precision here (static reason, then a trial call)."""
    torch = bench.torch
    reason = gemm_torch.static_unsupported(torch, bench.device, precision)
    if reason:
        return reason
    if precision not in trials:
        gen = torch.Generator(device=bench.device.label).manual_seed(bench.seed)
        trials[precision] = gemm_torch.trial(torch, bench.device, precision, gen)
    return trials[precision]


def run_torch(bench: Bench, case: GemmCase) -> CaseResult:
    """One GEMM case through torch."""
    torch = bench.torch
    transa, transb, note = gemm_torch.effective_layout(case)
    result = _base(bench, case, transa, transb)
    if note:
        result.notes.append(note)
    key = (case.precision, case.m, case.n, case.k, case.batch, transa, transb)
    if key in bench.done:
        result.status = SKIPPED
        result.reason = f"same problem as an earlier case ({note or 'identical case'})"
        return result
    bench.done.add(key)
    reason = gemm_torch.shape_unsupported(case)
    if reason:
        result.status, result.reason = UNSUPPORTED, reason
        return result
    if bench.refused(result, case.precision, int(1.2 * (result.footprint_bytes or 0))):
        return result
    precision = get_precision(case.precision)
    bench.release()
    gen = torch.Generator(device=bench.device.label).manual_seed(bench.seed + case.m + 3 * case.n)
    inputs = _inputs(bench)
    fast_accum = bool(bench.params.get("fp8_fast_accum"))
    try:
        with gemm_torch.matmul_precision(torch, case.precision):
            base = 0
            if bench.device.kind == "cuda":
                base = torch.cuda.memory_allocated(bench.device.index)
            first = gemm_torch.make_operands(torch, bench.device, case, transa, transb, gen, inputs)
            if bench.device.kind == "cuda":
                # after the inputs exist: their float32 staging copies must not count
                torch.cuda.reset_peak_memory_stats(bench.device.index)
            sets = [first]
            out = gemm_torch.gemm_call(torch, case.precision, first, fast_accum)()
            bench.synchronize()
            if bench.device.kind == "cuda":
                peak = torch.cuda.max_memory_allocated(bench.device.index) - base
                result.peak_memory_bytes = int(peak)
            del out
            extra = bench.operand_sets(result.footprint_bytes or 0) - 1
            for _ in range(extra):
                sets.append(
                    gemm_torch.make_operands(torch, bench.device, case, transa, transb, gen, inputs)
                )
            if len(sets) > 1:
                result.extra["operand_sets"] = len(sets)
            calls = [gemm_torch.gemm_call(torch, case.precision, s, fast_accum) for s in sets]
            result.timing = bench.measure_torch(calls)
            del sets[1:], calls
            if bench.check:
                out = gemm_torch.gemm_call(torch, case.precision, first, fast_accum)()
                bench.synchronize()
                if bench.corrupt:
                    bench.damage(result, out)
                result.check = check.gemm_check_torch(
                    torch,
                    out,
                    first.a,
                    first.b,
                    precision.tolerance(case.k),
                    full=_check_fits(bench, case),
                    seed=bench.seed,
                )
                del out
            del first
    except Exception as exc:  # one case's failure is reported, the job goes on
        return bench.fail(result, exc)
    _finish(bench, case, result)
    return result


def _finish(bench: Bench, case: GemmCase, result: CaseResult) -> None:
    bench.finish(result, case.precision)
    if (
        case.precision == "tf32"
        and result.check is not None
        and result.check.passed
        and result.check.error < 1e-5
        and bench.backend == "torch"
    ):
        result.notes.append(
            "TF32 was asked for but the error is at full-FP32 level: the library probably "
            "computed in FP32 (no TF32 path taken)"
        )


# --------------------------------------------------------------------------
# numpy
# --------------------------------------------------------------------------


def run_numpy(bench: Bench, case: GemmCase) -> CaseResult:
    """One GEMM case through numpy on the CPU."""
    np = bench.np
    result = _base(bench, case)
    reason = gemm_numpy.unsupported(case.precision)
    if reason:
        result.status, result.reason = UNSUPPORTED, reason
        return result
    if case.precision in gemm_numpy.NOTES:
        result.notes.append(gemm_numpy.NOTES[case.precision])
    if bench.refused(result, case.precision, int(1.2 * (result.footprint_bytes or 0))):
        return result
    precision = get_precision(case.precision)
    inputs = _inputs(bench)
    try:
        first = gemm_numpy.make_operands(np, case, bench.seed + case.m + 3 * case.n, inputs)
        sets = [first]
        for i in range(bench.operand_sets(result.footprint_bytes or 0) - 1):
            sets.append(gemm_numpy.make_operands(np, case, bench.seed + 1000 + i, inputs))
        if len(sets) > 1:
            result.extra["operand_sets"] = len(sets)
        calls = [gemm_numpy.gemm_call(np, a, b) for a, b in sets]
        result.timing = bench.measure(cpu_blocks(rotate(calls)))
        del sets[1:]
        if bench.check:
            a, b = first
            out = np.matmul(a, b)
            if bench.corrupt:
                bench.damage(result, out)
            result.check = check.gemm_check_numpy(
                np, out, a, b, precision.tolerance(case.k),
                full=_check_fits(bench, case), seed=bench.seed,
            )  # fmt: skip
    except Exception as exc:  # one case's failure is reported, the job goes on
        return bench.fail(result, exc)
    _finish(bench, case, result)
    return result


# --------------------------------------------------------------------------
# rocblas-bench / hipblaslt-bench
# --------------------------------------------------------------------------


def run_tool_case(bench: Bench, case: GemmCase, artifacts: list[tuple[str, str]]) -> CaseResult:
    """One GEMM case through an external benchmark tool, run tool_repeats times.

    ``artifacts`` collects (name, transcript) pairs of the raw tool output.
    """
    import time

    from stack.tools import ToolError, run_tool

    tool = bench.backend
    result = _base(bench, case)
    reason = blas_tools.unsupported(tool, case.precision, bench.device.arch)
    if reason:
        result.status, result.reason = UNSUPPORTED, reason
        return result
    if bench.refused(result, case.precision):
        return result
    params = bench.params
    repeats = int(params.get("tool_repeats", 5))
    flush = None
    if params.get("cold_cache"):
        flush = 2 * (bench.device.l2_bytes or 256 * 2**20)
    samples: list[float] = []
    rows: list[dict[str, Any]] = []
    transcripts = []
    wall_start = time.time()
    for i in range(repeats):
        argv = blas_tools.build_argv(
            tool,
            case,
            iters=int(params.get("tool_iters", 10)),
            cold_iters=int(params.get("tool_cold_iters", 2)),
            device=bench.device.index,
            verify=bench.check and i == 0,
            flush_bytes=flush,
        )
        argv[0] = bench.tool_path or tool
        try:
            run = run_tool(
                argv,
                float(params.get("tool_timeout_s", 300)),
                extra_dirs=blas_tools.search_dirs(tool),
            )
        except ToolError as exc:
            result.status, result.reason = ERROR, str(exc)
            return result
        transcripts.append(run.transcript())
        if not run.ok:
            result.status = ERROR
            result.reason = f"{tool} exit status {run.returncode}: {run.first_line()}"
            break
        try:
            row = blas_tools.parse_output(run.stdout, tool)
        except ValueError as exc:
            result.status, result.reason = ERROR, f"could not parse {tool} output: {exc}"
            break
        rows.append(row)
        samples.append(row["us"] / 1e6)
    artifacts.append((f"{tool}/{case.label().replace(' ', '_')}.txt", "\n".join(transcripts)))
    if not samples:
        return result
    result.timing = Timing(
        samples_s=samples,
        inner=int(params.get("tool_iters", 10)),
        warmup_calls=int(params.get("tool_cold_iters", 2)),
        stop_reason=f"{len(samples)} tool runs",
        wall_start=wall_start,
        wall_end=time.time(),
    )
    tool_tflops = [r["gflops"] / 1000 for r in rows if r.get("gflops")]
    if tool_tflops:
        result.extra["tool_reported_tflops_median"] = statistics.median(tool_tflops)
    if rows and rows[0].get("kernel_name"):
        result.extra["kernel"] = rows[0]["kernel_name"]
    if bench.check and rows:
        passed, error, tolerance, detail = blas_tools.check_from_tool(rows[0], case.precision)
        result.check = CheckResult(passed, error, tolerance, "tool:-v relative norm", 0, detail)
        result.notes.append(
            "the tool's own -v check (CPU reference); corrupt_output does not apply"
        )
    if result.status == ERROR:
        return result
    _finish(bench, case, result)
    return result
