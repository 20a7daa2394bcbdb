"""The blas-bench job: plan the cases, run them backend by backend, report.

The kind's ``run()`` (stack/kinds/blas_bench.py) calls ``run`` here. Order of
work: fingerprint the machine (the probe's code), set up each backend (import
torch / numpy, find the device and the tools), start the telemetry sampler,
run every family's cases, then turn the CaseResults into Measurements, a
summary (tables, unsupported precisions, claims check, flags, the method
used) and artifacts.
"""

from __future__ import annotations

from typing import Any

from stack.blas import blas_tools, claims, families, gemm, telemetry
from stack.blas.bench import Bench
from stack.blas.cases import GemmCase, gemm_cases
from stack.blas.inputs import NORMAL, describe
from stack.blas.records import describe_case, flags_for, measurements_for, summary_row
from stack.blas.results import FAILED_CHECK, OK, SKIPPED, UNSUPPORTED, CaseResult
from stack.blas.setup import SamplerKey, fingerprint, setup_backend
from stack.blas.stats import LoopSettings
from stack.contract import FAILED, SUCCEEDED
from stack.runtime import Artifact, Measurement, RunContext, RunResult

STATISTIC = (
    "median of the samples; a sample is the time of a block of back-to-back calls divided "
    "by the calls in it (blocks last at least min_sample_s, so short kernels are not "
    "swamped by timer resolution or launch gaps)"
)
WHY = (
    "GPU work is asynchronous, so device events (or a synchronisation before reading a host "
    "clock) are the only honest clock; warm-up keeps library loading, kernel selection and "
    "clock ramp-up out of the numbers; the loop samples until the coefficient of variation "
    "is under target_cv or case_budget_s is spent, and the median resists the odd slow "
    "sample; clocks, power and temperature are recorded during each case because sustained "
    "load makes GPUs lower their clocks"
)


# --------------------------------------------------------------------------
# Planning and running
# --------------------------------------------------------------------------


def plan(params: dict[str, Any], backend: str) -> list[tuple[str, Any]]:
    """The (family, case description) list a backend will run, in order."""
    families_wanted = params.get("families", ["gemm"])
    tasks: list[tuple[str, Any]] = []
    if "gemm" in families_wanted:
        tasks.extend(("gemm", case) for case in gemm_cases(params))
    if backend in blas_tools.TOOLS:
        return tasks
    if "bandwidth" in families_wanted:
        for size in params.get("bandwidth_mib", [1024]):
            tasks.extend(("bandwidth", (op, size)) for op in families.BANDWIDTH_OPS)
    if "fft" in families_wanted:
        for precision in params.get("fft_precisions", ["fp32"]):
            for shape in params.get("fft_shapes", []):
                tasks.append(("fft", (list(shape), int(params.get("fft_batch", 1)), precision)))
    if "solver" in families_wanted:
        for precision in params.get("solver_precisions", ["fp32", "fp64"]):
            for op in params.get("solver_ops", list(families.SOLVER_OPS)):
                tasks.extend(
                    ("solver", (op, n, precision)) for n in sorted(params.get("solver_sizes", []))
                )
    return tasks


def run_task(
    bench: Bench,
    family: str,
    spec: Any,
    trials: dict[str, str | None],
    tool_outputs: list[tuple[str, str]],
) -> CaseResult:
    """Run one planned task on a backend."""
    if family == "gemm":
        case: GemmCase = spec
        if bench.backend == "torch":
            reason = gemm.unsupported_torch(bench, case.precision, trials)
            if reason:
                result = gemm._base(bench, case)
                result.status, result.reason = UNSUPPORTED, reason
                return result
            return gemm.run_torch(bench, case)
        if bench.backend == "numpy":
            return gemm.run_numpy(bench, case)
        return gemm.run_tool_case(bench, case, tool_outputs)
    if family == "bandwidth":
        op, size = spec
        return families.bandwidth_case(bench, op, size)
    if family == "fft":
        shape, batch, precision = spec
        return families.fft_case(bench, shape, batch, precision)
    op, n, precision = spec
    return families.solver_case(bench, op, n, precision)


# --------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------


def run(params: dict[str, Any], ctx: RunContext) -> RunResult:
    """The whole blas-bench job."""
    settings = LoopSettings.from_params(params)
    cv_warn = float(params.get("cv_warn", 0.02))

    def log(message: str, level: str = "info") -> None:
        ctx.emit.log(message, level=level)

    artifacts: list[Artifact] = []
    environment, env_error = None, None
    if params.get("environment", True):
        ctx.emit.progress(1, "fingerprinting the machine (probe)")
        environment, probe_artifacts, env_error = fingerprint(ctx)
        artifacts.extend(probe_artifacts)
        if env_error:
            log(f"environment fingerprint failed: {env_error}", "warning")

    benches: list[tuple[Bench, list[tuple[str, Any]]]] = []
    unavailable: dict[str, str] = {}
    libraries: dict[str, str] = {}
    gpu_samplers: dict[SamplerKey, telemetry.Sampler] = {}
    for backend in params.get("backends", ["torch"]):
        bench, reason, library = setup_backend(backend, params, settings, environment, gpu_samplers)
        if bench is None:
            unavailable[backend] = reason or "unavailable"
            log(f"{backend}: cannot run: {reason}", "warning")
            continue
        if library:
            libraries[backend] = library
        log(f"{backend}: {bench.device.label} {bench.device.name or ''} ({library})".strip())
        benches.append((bench, plan(params, backend)))

    total = sum(len(tasks) for _, tasks in benches)
    done = 0
    results: list[CaseResult] = []
    tool_outputs: list[tuple[str, str]] = []
    samplers: list[telemetry.Sampler] = []
    for bench, tasks in benches:
        if bench.sampler not in samplers:
            bench.sampler.start()
            samplers.append(bench.sampler)
        trials: dict[str, str | None] = {}
        try:
            for family, spec in tasks:
                result = run_task(bench, family, spec, trials, tool_outputs)
                results.append(result)
                done += 1
                label = describe_case(result)
                rate = result.median_rate()
                if result.status in (OK, FAILED_CHECK) and rate is not None:
                    ctx.emit.metric(label, rate, result.rate_unit)
                    cv = result.timing.summary.cv * 100 if result.timing else 0.0
                    log(f"{label}: {rate:.4g} {result.rate_unit} (CV {cv:.2f} %)")
                elif result.status != UNSUPPORTED:
                    log(f"{label}: {result.status}: {result.reason}", "warning")
                ctx.emit.progress(5 + 90 * done / max(total, 1), label)
        finally:
            bench.release()
    for sampler in samplers:
        sampler.stop()

    # ---- artifacts
    for sampler in samplers:
        if sampler.samples:
            name = f"blas-bench/telemetry-{sampler.source}.csv"
            artifacts.append(
                ctx.write_artifact(
                    name,
                    sampler.csv_text(),
                    "text/csv",
                    f"GPU clocks, power, temperature and throttle reasons from {sampler.source}",
                )
            )
    for name, text in tool_outputs:
        artifacts.append(
            ctx.write_artifact(
                f"blas-bench/{name}", text, description="raw output of the tool runs of one case"
            )
        )

    # ---- measurements and summary
    measurements: list[Measurement] = []
    for result in results:
        measurements.extend(measurements_for(result))
    tables: dict[str, list[dict[str, Any]]] = {}
    unsupported: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    seen_unsupported: set[tuple[str, str, str]] = set()
    for result in results:
        if result.status == UNSUPPORTED:
            key = (result.backend, str(result.case.get("precision")), result.reason or "")
            if key not in seen_unsupported:
                seen_unsupported.add(key)
                unsupported.append(
                    {
                        "backend": result.backend,
                        "family": result.family,
                        "precision": result.case.get("precision"),
                        "op": result.case.get("op"),
                        "reason": result.reason,
                    }
                )
            continue
        if result.status == SKIPPED:
            skipped.append({"case": describe_case(result), "reason": result.reason})
        tables.setdefault(result.family, []).append(summary_row(result, cv_warn))
    flags = flags_for(results, cv_warn)
    peaks_by_backend = {bench.backend: dict(bench.device.peaks.peaks) for bench, _ in benches}
    summary: dict[str, Any] = {
        "families": list(params.get("families", [])),
        "backends": {
            bench.backend: {
                "device": bench.device.as_dict(),
                "library": libraries.get(bench.backend),
                "timing_method": bench.timing_method(),
                "telemetry": bench.sampler.describe(),
            }
            for bench, _ in benches
        },
        "backends_unavailable": unavailable,
        "method": {
            "statistic": STATISTIC,
            "why": WHY,
            "warmup": {"seconds": settings.warmup_s, "min_calls": settings.warmup_min_calls},
            "repetitions": {
                "min": settings.min_reps,
                "max": settings.max_reps,
                "target_cv": settings.target_cv,
                "case_budget_s": settings.budget_s,
                "min_sample_s": settings.min_sample_s,
            },
            "cold_cache": bool(params.get("cold_cache")),
            "inputs": describe(params.get("inputs", NORMAL)),
            "check": (
                "element-wise against a float64 reference from the same inputs, error scaled by "
                "|row of A| * |column of B|, tolerance per precision (stack/blas/precisions.py)"
                if params.get("check", True)
                else "off"
            ),
            "corrupt_output": bool(params.get("corrupt_output")),
        },
        "cases": {
            "planned": total,
            "measured": sum(1 for r in results if r.measured),
            "unsupported": sum(1 for r in results if r.status == UNSUPPORTED),
            "skipped": len(skipped),
            "failed_checks": len(flags["failed_checks"]),
            "errors": len(flags["errors"]),
        },
        "tables": tables,
        "unsupported": unsupported,
        "skipped": skipped,
        "claims": claims.judge_noise(
            claims.claims_check(results, peaks_by_backend), tables.get("gemm", [])
        ),
        "flags": flags,
        "environment_error": env_error,
    }

    status, error = SUCCEEDED, None
    problems = []
    if flags["failed_checks"]:
        problems.append(f"{len(flags['failed_checks'])} case(s) failed the correctness check")
    if flags["errors"]:
        problems.append(f"{len(flags['errors'])} case(s) raised errors")
    if not benches:
        problems.append(
            "no backend could run: " + "; ".join(f"{k}: {v}" for k, v in unavailable.items())
        )
    elif not any(r.measured for r in results) and not all(r.status == UNSUPPORTED for r in results):
        problems.append("nothing was measured")
    if problems:
        status, error = FAILED, "; ".join(problems)
    ctx.emit.progress(100, "done")
    return RunResult(
        status=status,
        environment=environment,
        measurements=measurements,
        summary=summary,
        artifacts=artifacts,
        error=error,
    )
