"""The blas-bench job: plan the cases, run them backend by backend, report.

The kind's ``run()`` (stack/kinds/blas_bench.py) calls ``run`` here. Order of
work: fingerprint the machine (the probe's code), set up each backend (import
torch / numpy, find the device and the tools), start the telemetry sampler,
run every family's cases, then turn the CaseResults into Measurements, a
summary (tables, unsupported precisions, claims check, flags, the method
used) and artifacts.
"""

from __future__ import annotations

import io
import math
from typing import Any

from stack.blas import blas_tools, claims, families, gemm, telemetry
from stack.blas.bench import Bench
from stack.blas.cases import GemmCase, gemm_cases
from stack.blas.devices import Device, cpu_device, torch_device
from stack.blas.peaks import lookup
from stack.blas.results import ERROR, FAILED_CHECK, OK, SKIPPED, UNSUPPORTED, CaseResult
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
# Setup
# --------------------------------------------------------------------------


def fingerprint(ctx: RunContext) -> tuple[dict[str, Any] | None, list[Artifact], str | None]:
    """The probe's environment fingerprint, taken with the probe's own code.

    The probe's progress events would fight this job's progress bar, so they
    go to a throw-away emitter; its raw tool outputs become this job's
    artifacts under probe/.
    """
    from stack.events import Emitter
    from stack.probe import probe_host

    sub = RunContext(out=ctx.out, emit=Emitter(io.StringIO()), work=ctx.work)
    try:
        result = probe_host(sub)
    except Exception as exc:  # a benchmark without a fingerprint still counts
        return None, [], f"{type(exc).__name__}: {exc}"
    artifacts = [a if isinstance(a, Artifact) else Artifact(**a) for a in result.artifacts]
    return result.environment, artifacts, None


def _tool_device(environment: dict[str, Any] | None, index: int) -> Device:
    """The AMD GPU the ROCm tools will use, described from the fingerprint when there is one."""
    gpus = [g for g in (environment or {}).get("gpus", []) if g.get("vendor") == "amd"]
    gpu = gpus[index] if index < len(gpus) else None
    if gpu is None:
        return Device(kind="cuda", index=index, vendor="amd", peaks=lookup(None, None))
    return Device(
        kind="cuda",
        index=index,
        vendor="amd",
        name=gpu.get("model"),
        arch=gpu.get("arch"),
        uuid=gpu.get("uuid"),
        memory_bytes=gpu.get("memory_bytes"),
        peaks=lookup(gpu.get("model"), gpu.get("arch")),
    )


SamplerKey = tuple[str | None, int]


def gpu_sampler(
    shared: dict[SamplerKey, telemetry.Sampler], device: Device, interval_ms: int
) -> telemetry.Sampler:
    """The run's one sampler for the device's GPU, made on first use.

    Two backends on one GPU (torch on ROCm and rocblas-bench, say) must share
    it: two pollers would double the load on the SMI tool and both write the
    same telemetry artifact.
    """
    key = (device.vendor, telemetry.host_gpu_index(device.vendor, device.index))
    if key not in shared:
        shared[key] = telemetry.make_sampler(device.vendor, device.index, device.uuid, interval_ms)
    return shared[key]


def setup_backend(
    backend: str,
    params: dict[str, Any],
    settings: LoopSettings,
    environment: dict[str, Any] | None,
    samplers: dict[SamplerKey, telemetry.Sampler],
) -> tuple[Bench | None, str | None, str | None]:
    """A Bench for the backend, or (None, why it cannot run); plus the BLAS library's name.

    ``samplers`` is the run's GPU samplers, shared between its backends.
    """
    interval = int(params.get("telemetry_interval_ms", 100))
    common = {
        "params": params,
        "settings": settings,
        "corrupt": bool(params.get("corrupt_output")),
        "check": bool(params.get("check", True)),
        "seed": int(params.get("seed", 0)),
    }
    if backend == "numpy":
        try:
            import numpy as np
        except ImportError as exc:
            return None, f"numpy is not installed ({exc})", None
        from stack.blas.gemm_numpy import library_name

        device = cpu_device()
        sampler = telemetry.null_sampler("CPU run: no GPU telemetry", interval)
        bench = Bench(backend, device=device, sampler=sampler, np=np, **common)
        return bench, None, library_name(np)
    if backend == "torch":
        try:
            import numpy as np
            import torch
        except ImportError as exc:
            return None, f"torch (and numpy) must be installed for the torch backend ({exc})", None
        try:
            device = torch_device(
                torch, str(params.get("device", "auto")), int(params.get("gpu_index", 0))
            )
        except RuntimeError as exc:
            return None, str(exc), None
        if params.get("telemetry", True) and device.kind == "cuda":
            sampler = gpu_sampler(samplers, device, interval)
        else:
            sampler = telemetry.null_sampler(
                "telemetry off" if device.kind == "cuda" else "CPU run: no GPU telemetry", interval
            )
        from stack.blas.gemm_torch import library_name

        bench = Bench(backend, device=device, sampler=sampler, torch=torch, np=np, **common)
        return bench, None, library_name(torch, device)
    if backend in blas_tools.TOOLS:
        from stack.blas.schema import INSTALL_HINTS
        from stack.tools import which

        dirs = blas_tools.search_dirs(backend)
        path = which(backend, dirs)
        if path is None:
            return (
                None,
                f"{backend} not found on PATH or in {', '.join(dirs)} ({INSTALL_HINTS[backend]})",
                None,
            )
        device = _tool_device(environment, int(params.get("gpu_index", 0)))
        if params.get("telemetry", True):
            sampler = gpu_sampler(samplers, device, interval)
        else:
            sampler = telemetry.null_sampler("telemetry off", interval)
        library = "rocBLAS" if backend == blas_tools.ROCBLAS else "hipBLASLt"
        bench = Bench(backend, device=device, sampler=sampler, tool_path=path, **common)
        return bench, None, library
    return None, f"unknown backend {backend!r}", None


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


def describe_case(result: CaseResult) -> str:
    """A short label for logs and flags."""
    c = result.case
    if result.family == "gemm":
        batch = f" x{c['batch']}" if c.get("batch", 1) != 1 else ""
        shape = f"{c['m']}x{c['n']}x{c['k']} {c['transa']}{c['transb']}{batch}"
        return f"{result.backend} gemm {c['precision']} {shape}"
    if result.family == "bandwidth":
        return f"{result.backend} {c['op']} {c['array_mib']:g} MiB"
    if result.family == "fft":
        return f"{result.backend} fft {c['precision']} {c['shape']} batch {c['batch']}"
    return f"{result.backend} {c['op']} {c['precision']} n={c['n']}"


# --------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------


def _finite(values: list[float]) -> list[float]:
    return [v for v in values if math.isfinite(v)]


def measurements_for(result: CaseResult) -> list[Measurement]:
    """Every Measurement of one measured case."""
    if not result.measured or result.status not in (OK, FAILED_CHECK):
        return []
    assert result.timing is not None
    out: list[Measurement] = []
    bench_name, case = result.family, dict(result.case)
    times_ms = [s * 1e3 for s in result.timing.samples_s]
    summary = result.timing.summary
    out.append(Measurement(bench_name, "time", "ms", summary.median * 1e3, times_ms, case, "lower"))
    rates = _finite(result.rates())
    rate = result.median_rate()
    metric = "bandwidth" if result.family == "bandwidth" else "throughput"
    if rate is not None and math.isfinite(rate):
        out.append(Measurement(bench_name, metric, result.rate_unit, rate, rates, case, "higher"))
        if result.peak:
            pct = [r / result.peak * 100 for r in rates]
            out.append(
                Measurement(
                    bench_name, "pct_of_peak", "%", rate / result.peak * 100, pct, case, "higher"
                )
            )
    cv = summary.cv * 100
    out.append(Measurement(bench_name, "cv", "%", cv, [cv], case, "lower"))
    if result.check is not None and math.isfinite(result.check.error):
        err = result.check.error
        out.append(Measurement(bench_name, "error", "ratio", err, [err], case, "lower"))
    if result.footprint_bytes:
        size = float(result.footprint_bytes)
        out.append(Measurement(bench_name, "memory_footprint", "B", size, [size], case, "lower"))
    if result.peak_memory_bytes:
        size = float(result.peak_memory_bytes)
        out.append(Measurement(bench_name, "peak_memory", "B", size, [size], case, "lower"))
    if result.family == "fft" and result.extra.get("bytes_per_call"):
        moved = float(result.extra["bytes_per_call"])
        gbps = [moved / s / 1e9 for s in result.timing.samples_s if s > 0]
        out.append(
            Measurement(
                bench_name,
                "effective_bandwidth",
                "GB/s",
                moved / summary.median / 1e9,
                gbps,
                case,
                "higher",
            )
        )
        hbm = result.extra.get("hbm_peak_gbps")
        if hbm:
            pct = [g / hbm * 100 for g in gbps]
            value = moved / summary.median / 1e9 / hbm * 100
            out.append(Measurement(bench_name, "pct_of_hbm_peak", "%", value, pct, case, "higher"))
    tel = result.telemetry or {}
    for metric_name, samples_key, stats_key, unit, better in (
        ("sm_clock", "sm_clock_samples", "sm_clock_mhz", "MHz", "higher"),
        ("power", "power_samples", "power_w", "W", "lower"),
        ("temperature", "temperature_samples", "temperature_c", "C", "lower"),
    ):
        values = tel.get(samples_key)
        stats = tel.get(stats_key)
        if values and stats:
            # the window summary's median, so that this and the summary table agree
            median = stats["median"]
            out.append(Measurement(bench_name, metric_name, unit, median, values, case, better))
    return out


def summary_row(result: CaseResult, cv_warn: float) -> dict[str, Any]:
    """One row of the job page's table."""
    row: dict[str, Any] = dict(result.case)
    row["status"] = result.status
    if result.reason:
        row["reason"] = result.reason
    if result.measured:
        assert result.timing is not None
        s = result.timing.summary
        rate = result.median_rate()
        rates = result.rates()
        row.update(
            median_ms=round(s.median * 1e3, 6),
            rate=None if rate is None else round(rate, 4),
            unit=result.rate_unit,
            pct_of_peak=None if not (rate and result.peak) else round(rate / result.peak * 100, 2),
            best_rate=round(max(rates), 4) if rates else None,
            peak=result.peak_label,
            cv_pct=round(s.cv * 100, 3),
            high_cv=s.cv > cv_warn,
            samples=s.n,
            calls_per_sample=result.timing.inner,
            warmup_calls=result.timing.warmup_calls,
            stopped_by=result.timing.stop_reason,
        )
    if result.check is not None:
        row["check"] = result.check.as_dict()
    if result.footprint_bytes:
        row["footprint_bytes"] = result.footprint_bytes
    if result.peak_memory_bytes:
        row["peak_memory_bytes"] = result.peak_memory_bytes
    tel = result.telemetry
    if tel:
        row["telemetry"] = {
            key: tel[key]
            for key in (
                "samples",
                "sm_clock_mhz",
                "mem_clock_mhz",
                "power_w",
                "temperature_c",
                "throttled",
                "throttle_reasons",
                "clock_spread",
                "clock_unstable",
            )
        }
    if result.notes:
        row["notes"] = list(result.notes)
    if result.family == "fft" and result.measured and result.extra.get("bytes_per_call"):
        assert result.timing is not None
        gbps = result.extra["bytes_per_call"] / result.timing.summary.median / 1e9
        row["effective_gbps"] = round(gbps, 1)
        if result.extra.get("hbm_peak_gbps"):
            row["pct_of_hbm_peak"] = round(gbps / result.extra["hbm_peak_gbps"] * 100, 2)
    if result.extra:
        row["extra"] = {
            k: v for k, v in result.extra.items() if k not in ("bytes_per_call", "hbm_peak_gbps")
        }
    return row


def flags_for(results: list[CaseResult], cv_warn: float) -> dict[str, list[str]]:
    """Lists of cases that need a second look."""
    flags: dict[str, list[str]] = {
        "failed_checks": [],
        "errors": [],
        "high_cv": [],
        "throttled": [],
        "clock_unstable": [],
    }
    for r in results:
        label = describe_case(r)
        if r.status == FAILED_CHECK:
            flags["failed_checks"].append(f"{label}: {r.reason}")
        if r.status == ERROR:
            flags["errors"].append(f"{label}: {r.reason}")
        if r.measured and r.timing is not None and r.timing.summary.cv > cv_warn:
            flags["high_cv"].append(f"{label}: CV {r.timing.summary.cv * 100:.2f} %")
        if r.telemetry and r.telemetry.get("throttled"):
            flags["throttled"].append(f"{label}: {', '.join(r.telemetry['throttle_reasons'])}")
        if r.telemetry and r.telemetry.get("clock_unstable"):
            flags["clock_unstable"].append(
                f"{label}: SM clock spread {r.telemetry['clock_spread'] * 100:.1f} %"
            )
    return flags


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
        "claims": claims.claims_check(results, peaks_by_backend),
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
