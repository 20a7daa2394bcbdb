"""What a case becomes in result.json: its measurements, its summary row, the run's flags."""

from __future__ import annotations

import math
from typing import Any

from stack.blas.results import ERROR, FAILED_CHECK, OK, CaseResult
from stack.runtime import Measurement


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
