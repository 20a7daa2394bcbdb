"""One profile whatever the profiler: the top kernels by time, and their measurements.

Every reader (torch_profiler, ncu, rocprof) returns KernelStat rows; this module sorts
them, gives each its share of the total, and turns the top ones into Measurements under
one benchmark, so that two profiles of the same workload — one from ncu on an H200, one
from rocprofv3 on an MI300X — compare through the results layer like any other numbers.
A counter the profiler does not give stays None and becomes no measurement.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from stack.runtime import Measurement

BENCHMARK = "profile"
KERNEL_NAME_MAX = 200  # in a measurement's case; the summary keeps the whole name

# KernelStat's counters -> (metric, unit, better); all are % of the device's peak
# (or of sectors, for the hit rate), so higher means closer to what the hardware gives.
COUNTERS = (
    ("occupancy_pct", "achieved_occupancy", "%", "higher"),
    ("sm_throughput_pct", "compute_throughput", "% of peak", "higher"),
    ("dram_throughput_pct", "dram_throughput", "% of peak", "higher"),
    ("l2_hit_pct", "l2_hit_rate", "%", "higher"),
)


@dataclass
class KernelStat:
    """One kernel (or, in a CPU profile, one operator) summed over its calls.

    ``durations_ns`` holds each call's time where the profiler gives it (a trace, ncu's
    rows); a statistics file gives totals only.
    """

    name: str
    calls: int
    total_ns: float
    durations_ns: list[float] = field(default_factory=list)
    share_pct: float | None = None
    occupancy_pct: float | None = None
    sm_throughput_pct: float | None = None
    dram_throughput_pct: float | None = None
    l2_hit_pct: float | None = None

    @property
    def mean_ns(self) -> float:
        """Mean time per call."""
        return self.total_ns / self.calls if self.calls else 0.0

    def as_dict(self) -> dict[str, Any]:
        """The summary's row (no per-call durations: they go to measurements' samples)."""
        row: dict[str, Any] = {
            "name": self.name,
            "calls": self.calls,
            "total_ns": round(self.total_ns, 1),
            "mean_ns": round(self.mean_ns, 1),
            "share_pct": None if self.share_pct is None else round(self.share_pct, 2),
        }
        for attribute, *_ in COUNTERS:
            value = getattr(self, attribute)
            row[attribute] = None if value is None else round(value, 2)
        return row


def finite(value: Any) -> float | None:
    """A number from a profiler's text or JSON, or None for empty, "n/a" or NaN."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str):
        value = value.strip().replace(",", "")
        if not value or value.lower() in ("n/a", "nan", "-"):
            return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def merge_by_name(rows: Iterable[KernelStat]) -> list[KernelStat]:
    """Rows of one name summed into one; counters averaged weighted by time."""
    merged: dict[str, list[KernelStat]] = {}
    for row in rows:
        merged.setdefault(row.name, []).append(row)
    out = []
    for name, group in merged.items():
        total = sum(r.total_ns for r in group)
        stat = KernelStat(
            name=name,
            calls=sum(r.calls for r in group),
            total_ns=total,
            durations_ns=[d for r in group for d in r.durations_ns],
        )
        for attribute, *_ in COUNTERS:
            weighted = [(getattr(r, attribute), r.total_ns) for r in group]
            weighted = [(v, w) for v, w in weighted if v is not None]
            if weighted:
                weight = sum(w for _, w in weighted)
                value = (
                    sum(v * w for v, w in weighted) / weight
                    if weight > 0
                    else sum(v for v, _ in weighted) / len(weighted)
                )
                setattr(stat, attribute, value)
        out.append(stat)
    return out


def top_kernels(rows: Iterable[KernelStat], top: int) -> tuple[list[KernelStat], float]:
    """The ``top`` kernels by total time, each with its share of all kernels' time; and
    that total (ns). Ties go by name, so the table is the same on every run."""
    merged = merge_by_name(rows)
    total = sum(r.total_ns for r in merged)
    ordered = sorted(merged, key=lambda r: (-r.total_ns, r.name))
    shared = [
        replace(r, share_pct=100.0 * r.total_ns / total if total > 0 else None)
        for r in ordered[:top]
    ]
    return shared, total


def short_name(name: str) -> str:
    """A kernel name short enough for a measurement's case, and still one per kernel.

    C++ kernel names run to thousands of characters; a long one keeps its start and
    gets a digest of the whole, so two templates that share a prefix stay apart.
    """
    if len(name) <= KERNEL_NAME_MAX:
        return name
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:10]
    return f"{name[: KERNEL_NAME_MAX - 12]}…{digest}"


def kernel_measurements(
    kernels: Iterable[KernelStat], case: dict[str, Any], profiler: str
) -> list[Measurement]:
    """Each kernel's time, calls, share and counters as Measurements under BENCHMARK.

    The case is the workload's (what was run, on what dtype) plus the profiler and the
    kernel, so a comparison pairs the same kernel of the same workload measured the
    same way.
    """
    out = []
    for kernel in kernels:
        kcase = {**case, "profiler": profiler, "kernel": short_name(kernel.name)}
        samples = [float(d) for d in kernel.durations_ns[:1000]]
        out.append(Measurement(BENCHMARK, "kernel_time", "ns", kernel.total_ns, [], kcase, "lower"))
        out.append(
            Measurement(
                BENCHMARK, "kernel_mean_time", "ns", kernel.mean_ns, samples, kcase, "lower"
            )
        )
        out.append(
            Measurement(BENCHMARK, "kernel_calls", "calls", kernel.calls, [], kcase, "lower")
        )
        if kernel.share_pct is not None:
            out.append(
                Measurement(BENCHMARK, "kernel_share", "%", kernel.share_pct, [], kcase, "lower")
            )
        for attribute, metric, unit, better in COUNTERS:
            value = getattr(kernel, attribute)
            if value is not None:
                out.append(Measurement(BENCHMARK, metric, unit, value, [], kcase, better))
    return out


def step_measurement(step_times_ms: list[float], case: dict[str, Any]) -> Measurement | None:
    """The workload's time per step (the median, every step as a sample), when it has steps."""
    times = [t for t in step_times_ms if finite(t) is not None]
    if not times:
        return None
    ordered = sorted(times)
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    return Measurement(BENCHMARK, "step_time", "ms", median, times, dict(case), "lower")
