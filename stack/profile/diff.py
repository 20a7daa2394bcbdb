"""Two profiles compared kernel by kernel: which got slower or faster, by how much, how sure.

A profile (stack/profile/normalise.py) stores, per profiler and kernel, the total time,
the calls and every call's duration as samples. The diff pairs the kernels of two
profiles (same name first; then, for a kernel that only changed its template or tile —
``…_bf16_…`` against ``…_f16_…`` — the most similar remaining name), and compares the
time per call as a ratio of medians with a bootstrap interval over the calls, so "+14 %"
comes with how sure it is. Kernels are ranked by the time per step they add or save,
which is what a regression costs; ``explain_regression`` turns the worst one into the
sentence a regression check prints.

Plain Python (no numpy, no Django): it runs on the device next to the profiler, and the
results layer calls it with its own interval function (results.stats.ratio_interval).
"""

from __future__ import annotations

import difflib
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from stack.blas.stats import ratio_of_medians
from stack.profile.normalise import BENCHMARK, COUNTERS, short_name

PREFERRED_PROFILERS = ("torch", "ncu", "rocprofv3")
SIMILAR_NAMES = 0.6  # difflib ratio above which two unmatched kernels are one that changed
THRESHOLD_PCT = 2.0  # a change smaller than this is "unchanged" even when it is certain

SLOWER, FASTER, UNCHANGED, UNCERTAIN = "slower", "faster", "unchanged", "uncertain"
ADDED, REMOVED = "added", "removed"

Interval = Callable[[Sequence[float], Sequence[float]], Any]
"""``interval(baseline, current)`` → an object with ``value``, ``low``, ``high`` (ratios
current / baseline of the medians; low and high None when it cannot say)."""


class DiffError(ValueError):
    """The two documents cannot be compared (not profiles, no profiler in common)."""


@dataclass
class KernelSide:
    """One kernel of one profile, as the diff needs it."""

    name: str
    calls: int
    total_ns: float
    samples: list[float] = field(default_factory=list)
    counters: dict[str, float] = field(default_factory=dict)

    def step_samples(self, steps: int) -> list[float] | None:
        """The kernel's time in each step (its calls summed step by step), when every call
        is sampled, in launch order, and each step made the same number of calls.

        A kernel that serves several shapes (one GEMM kernel for a block's four
        projections) has calls of several durations: resampling calls would mix them at
        random, while each step's sum is one steady number per step.
        """
        per_step = self.calls // steps if steps else 0
        if per_step < 2 or per_step * steps != self.calls or len(self.samples) != self.calls:
            return None
        return [sum(self.samples[i * per_step : (i + 1) * per_step]) for i in range(steps)]

    @property
    def per_call_ns(self) -> float:
        """The median call where there are samples, else the mean."""
        if self.samples:
            return float(statistics.median(self.samples))
        return self.total_ns / self.calls if self.calls else 0.0


@dataclass
class Profile:
    """A profile read back: the workload, its steps, and per profiler its kernels."""

    workload: dict[str, Any]
    steps: int
    kernels: dict[str, dict[str, KernelSide]]  # profiler -> kernel name -> side
    totals_ns: dict[str, float]  # profiler -> all kernels' time


def _rows(document: dict[str, Any]) -> list[dict[str, Any]]:
    rows = document.get("measurements")
    return [m for m in rows if isinstance(m, dict)] if isinstance(rows, list) else []


def load_profile(document: dict[str, Any]) -> Profile:
    """A profile from a profile job's result (result.json, or the job's summary and
    measurements as the server keeps them: ``{"summary": …, "measurements": […]}``).

    The measurements give each kernel's samples (every call's duration); the summary's
    top_kernels give the full names and the profilers' totals. Either alone will do.
    """
    if not isinstance(document, dict):
        raise DiffError("a profile is a JSON object (a profile job's result)")
    summary = document.get("summary") if isinstance(document.get("summary"), dict) else {}
    workload = summary.get("workload") if isinstance(summary.get("workload"), dict) else {}
    kernels: dict[str, dict[str, KernelSide]] = {}
    totals: dict[str, float] = {}
    full_names: dict[tuple[str, str], str] = {}
    tables = summary.get("top_kernels") if isinstance(summary.get("top_kernels"), dict) else {}
    for profiler, table in tables.items():
        for row in table if isinstance(table, list) else []:
            if not isinstance(row, dict) or not row.get("name"):
                continue
            name = str(row["name"])
            full_names[(profiler, short_name(name))] = name
            side = KernelSide(
                name=name,
                calls=int(row.get("calls") or 0),
                total_ns=float(row.get("total_ns") or 0.0),
            )
            for attribute, metric, *_ in COUNTERS:
                if row.get(attribute) is not None:
                    side.counters[metric] = float(row[attribute])
            kernels.setdefault(profiler, {})[name] = side
    for profiler, info in (summary.get("profilers") or {}).items():
        if isinstance(info, dict) and info.get("ran") and info.get("total_ns") is not None:
            totals[profiler] = float(info["total_ns"])

    counter_metrics = {metric for _, metric, *_ in COUNTERS}
    for row in _rows(document):
        case = row.get("case") if isinstance(row.get("case"), dict) else {}
        profiler, kernel = case.get("profiler"), case.get("kernel")
        if row.get("benchmark") != BENCHMARK or not profiler or not kernel:
            continue
        if not workload:
            workload = {k: v for k, v in case.items() if k not in ("profiler", "kernel", "level")}
        name = full_names.get((profiler, kernel), str(kernel))
        side = kernels.setdefault(profiler, {}).setdefault(name, KernelSide(name, 0, 0.0))
        metric, value = row.get("metric"), row.get("value")
        if not isinstance(value, int | float):
            continue
        if metric == "kernel_time":
            side.total_ns = float(value)
        elif metric == "kernel_calls":
            side.calls = int(value)
        elif metric == "kernel_mean_time":
            samples = row.get("samples") if isinstance(row.get("samples"), list) else []
            side.samples = [float(s) for s in samples if isinstance(s, int | float)]
        elif metric in counter_metrics:
            side.counters[metric] = float(value)
    for profiler, table in kernels.items():
        totals.setdefault(profiler, sum(k.total_ns for k in table.values()))
    if not kernels:
        raise DiffError("no kernels: this is not a profile job's result")
    steps = workload.get("iterations")
    return Profile(
        workload=dict(workload),
        steps=int(steps) if isinstance(steps, int) and steps > 0 else 1,
        kernels=kernels,
        totals_ns=totals,
    )


def label(name: str, width: int = 64) -> str:
    """A kernel's name short enough for a sentence (C++ templates run to pages)."""
    name = " ".join(name.split())
    return name if len(name) <= width else name[: width - 1] + "…"


@dataclass
class KernelChange:
    """One kernel across the two profiles."""

    name: str  # the current profile's name (the baseline's for a removed kernel)
    baseline_name: str | None
    matched: str  # "name", "similar", ADDED or REMOVED
    baseline_ns: float | None  # per call: the median call, else the mean
    current_ns: float | None
    baseline_calls: int
    current_calls: int
    ratio: float | None  # current / baseline per call
    low: float | None
    high: float | None
    step_delta_ns: float  # time per step added (+) or saved (-)
    verdict: str
    sure: bool  # an interval from samples on both sides excludes "no change"
    counters: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)
    basis: str = "call"  # what the ratio compares: each call, or the kernel's time a step

    @property
    def change_pct(self) -> float | None:
        """+14.0 for 14 % slower per call."""
        return None if self.ratio is None else 100.0 * (self.ratio - 1.0)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, for a summary or a page."""

        def pct(r: float | None) -> float | None:
            return None if r is None else round(100.0 * (r - 1.0), 2)

        return {
            "name": self.name,
            "baseline_name": self.baseline_name,
            "matched": self.matched,
            "baseline_ns": None if self.baseline_ns is None else round(self.baseline_ns, 1),
            "current_ns": None if self.current_ns is None else round(self.current_ns, 1),
            "baseline_calls": self.baseline_calls,
            "current_calls": self.current_calls,
            "ratio": None if self.ratio is None else round(self.ratio, 4),
            "change_pct": pct(self.ratio),
            "low_pct": pct(self.low),
            "high_pct": pct(self.high),
            "step_delta_ns": round(self.step_delta_ns, 1),
            "verdict": self.verdict,
            "sure": self.sure,
            "basis": self.basis,
            "counters": {k: list(v) for k, v in self.counters.items()},
        }


@dataclass
class ProfileDiff:
    """The kernels of two profiles of one profiler, worst change first."""

    profiler: str
    baseline_workload: dict[str, Any]
    current_workload: dict[str, Any]
    baseline_step_ns: float
    current_step_ns: float
    kernels: list[KernelChange]
    threshold_pct: float

    @property
    def step_ratio(self) -> float | None:
        """All kernels' time per step, current / baseline."""
        return self.current_step_ns / self.baseline_step_ns if self.baseline_step_ns else None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, with the regression sentence."""
        ratio = self.step_ratio
        return {
            "profiler": self.profiler,
            "baseline_workload": self.baseline_workload,
            "current_workload": self.current_workload,
            "baseline_step_ns": round(self.baseline_step_ns, 1),
            "current_step_ns": round(self.current_step_ns, 1),
            "step_change_pct": None if ratio is None else round(100.0 * (ratio - 1.0), 2),
            "threshold_pct": self.threshold_pct,
            "kernels": [k.as_dict() for k in self.kernels],
            "regression": explain_regression(self),
            "improvement": explain_improvement(self),
        }


def pair_kernels(
    baseline: Iterable[str], current: Iterable[str], similar: float = SIMILAR_NAMES
) -> list[tuple[str | None, str | None, str]]:
    """(baseline name, current name, how) for every kernel of either side.

    Same names pair first; the rest pair greedily by name similarity (a GEMM whose
    kernel changed tile or type between two builds is still that GEMM), and what is
    left is added or removed.
    """
    base, cur = list(dict.fromkeys(baseline)), list(dict.fromkeys(current))
    pairs: list[tuple[str | None, str | None, str]] = [(n, n, "name") for n in base if n in cur]
    left_base = [n for n in base if n not in cur]
    left_cur = [n for n in cur if n not in base]
    scored = sorted(
        (
            (difflib.SequenceMatcher(None, b, c).ratio(), i, j)
            for i, b in enumerate(left_base)
            for j, c in enumerate(left_cur)
        ),
        key=lambda t: (-t[0], t[1], t[2]),
    )
    used_b: set[int] = set()
    used_c: set[int] = set()
    for score, i, j in scored:
        if score < similar:
            break
        if i in used_b or j in used_c:
            continue
        used_b.add(i)
        used_c.add(j)
        pairs.append((left_base[i], left_cur[j], "similar"))
    pairs += [(b, None, REMOVED) for i, b in enumerate(left_base) if i not in used_b]
    pairs += [(None, c, ADDED) for j, c in enumerate(left_cur) if j not in used_c]
    return pairs


def _verdict(
    ratio: float | None, low: float | None, high: float | None, threshold: float
) -> tuple[str, bool]:
    if ratio is None:
        return UNCERTAIN, False
    big = abs(ratio - 1.0) * 100.0 >= threshold
    if low is None or high is None:  # no samples on a side: the value alone, not sure
        return (SLOWER if ratio > 1 else FASTER) if big else UNCHANGED, False
    if low > 1.0 and big:
        return SLOWER, True
    if high < 1.0 and big:
        return FASTER, True
    if (1.0 - threshold / 100.0) <= low and high <= (1.0 + threshold / 100.0):
        return UNCHANGED, True
    return (UNCERTAIN, False) if big else (UNCHANGED, False)


def common_profiler(baseline: Profile, current: Profile, asked: str | None = None) -> str:
    """The profiler both profiles have: the one asked for, else torch, ncu, rocprofv3."""
    shared = [p for p in baseline.kernels if p in current.kernels]
    if asked:
        if asked not in shared:
            raise DiffError(f"profiler: {asked!r} is not in both profiles (both have {shared})")
        return asked
    for name in PREFERRED_PROFILERS:
        if name in shared:
            return name
    if shared:
        return sorted(shared)[0]
    raise DiffError(
        f"no profiler in common: the baseline has {sorted(baseline.kernels)}, "
        f"the current profile {sorted(current.kernels)}"
    )


def diff_profiles(
    baseline: Profile | dict[str, Any],
    current: Profile | dict[str, Any],
    *,
    profiler: str | None = None,
    threshold_pct: float = THRESHOLD_PCT,
    interval: Interval = ratio_of_medians,
) -> ProfileDiff:
    """Compare two profiles (documents or loaded) kernel by kernel; see the module's doc."""
    base = baseline if isinstance(baseline, Profile) else load_profile(baseline)
    cur = current if isinstance(current, Profile) else load_profile(current)
    name = common_profiler(base, cur, profiler)
    base_k, cur_k = base.kernels[name], cur.kernels[name]
    changes = []
    for b_name, c_name, how in pair_kernels(base_k, cur_k):
        b = base_k.get(b_name) if b_name else None
        c = cur_k.get(c_name) if c_name else None
        b_step = b.total_ns / base.steps if b else 0.0
        c_step = c.total_ns / cur.steps if c else 0.0
        ratio = low = high = None
        basis = "call"
        verdict, sure = (ADDED if b is None else REMOVED), False
        if b is not None and c is not None:
            b_steps, c_steps = b.step_samples(base.steps), c.step_samples(cur.steps)
            if b_steps and c_steps:
                basis = "step"
                found = interval(b_steps, c_steps)
                ratio, low, high = found.value, found.low, found.high
            elif b.samples and c.samples:
                found = interval(b.samples, c.samples)
                ratio, low, high = found.value, found.low, found.high
            elif b.per_call_ns:
                ratio = c.per_call_ns / b.per_call_ns
            verdict, sure = _verdict(ratio, low, high, threshold_pct)
        counters = {}
        for metric in sorted({*(b.counters if b else {}), *(c.counters if c else {})}):
            counters[metric] = (
                b.counters.get(metric) if b else None,
                c.counters.get(metric) if c else None,
            )
        changes.append(
            KernelChange(
                name=(c or b).name,  # type: ignore[union-attr]
                baseline_name=b.name if b else None,
                matched=how,
                baseline_ns=b.per_call_ns if b else None,
                current_ns=c.per_call_ns if c else None,
                baseline_calls=b.calls if b else 0,
                current_calls=c.calls if c else 0,
                ratio=ratio,
                low=low,
                high=high,
                step_delta_ns=c_step - b_step,
                verdict=verdict,
                sure=sure,
                counters=counters,
                basis=basis,
            )
        )
    changes.sort(key=lambda k: (-abs(k.step_delta_ns), k.name))
    return ProfileDiff(
        profiler=name,
        baseline_workload=base.workload,
        current_workload=cur.workload,
        baseline_step_ns=base.totals_ns.get(name, 0.0) / base.steps,
        current_step_ns=cur.totals_ns.get(name, 0.0) / cur.steps,
        kernels=changes,
        threshold_pct=threshold_pct,
    )


def regression_kernel(diff: ProfileDiff) -> KernelChange | None:
    """The kernel that adds the most time per step among those that got slower for sure
    (or appeared); None when nothing did."""
    slower = [k for k in diff.kernels if (k.verdict == SLOWER and k.sure) or k.verdict == ADDED]
    slower = [k for k in slower if k.step_delta_ns > 0]
    return max(slower, key=lambda k: k.step_delta_ns, default=None)


def _sentence(kernel: KernelChange, what: str) -> str:
    if kernel.verdict == ADDED:
        return (
            f"the {what} is in `{label(kernel.name)}`, a kernel the baseline did not run "
            f"(+{kernel.step_delta_ns / 1000.0:.1f} µs a step, {kernel.current_calls} calls)"
        )
    change = kernel.change_pct or 0.0
    bounds = ""
    if kernel.low is not None and kernel.high is not None:
        bounds = (
            f"; 95 % interval {100 * (kernel.low - 1):+.1f} % to {100 * (kernel.high - 1):+.1f} %"
            f", {kernel.baseline_calls} vs {kernel.current_calls} calls"
        )
    renamed = f" (was `{label(kernel.baseline_name or '')}`)" if kernel.matched == "similar" else ""
    per = "a call" if kernel.basis == "call" else "of its time a step"
    return (
        f"the {what} is in `{label(kernel.name)}`{renamed}, {change:+.1f} % {per}{bounds}; "
        f"{kernel.step_delta_ns / 1000.0:+.1f} µs a step"
    )


def explain_regression(diff: ProfileDiff) -> str | None:
    """ "the regression is in `nvjet…`, +14.0 % a call; 95 % interval …" — or None."""
    kernel = regression_kernel(diff)
    return None if kernel is None else _sentence(kernel, "regression")


def explain_improvement(diff: ProfileDiff) -> str | None:
    """The same sentence for the kernel that saves the most time per step for sure."""
    faster = [
        k
        for k in diff.kernels
        if ((k.verdict == FASTER and k.sure) or k.verdict == REMOVED) and k.step_delta_ns < 0
    ]
    kernel = min(faster, key=lambda k: k.step_delta_ns, default=None)
    if kernel is None:
        return None
    if kernel.verdict == REMOVED:
        return (
            f"the improvement is that `{label(kernel.name)}` no longer runs "
            f"({kernel.step_delta_ns / 1000.0:+.1f} µs a step)"
        )
    return _sentence(kernel, "improvement")
