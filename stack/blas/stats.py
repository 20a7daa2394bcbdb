"""Statistics of timing samples and the adaptive repetition loop.

Plain Python on purpose: it is used by every backend (torch, numpy, the
external tools) and by the tests, and it must not pull numpy into the
runner's start-up.

The loop follows the usual benchmarking method: warm up (first calls pay for
library loading, kernel selection, clock ramp-up), then take samples until
the spread is small (coefficient of variation under a target) or a time
budget is spent, never fewer than a minimum. The median is the reported
value because a few slow samples (a preemption, a clock dip) should not move
it; the CV is reported beside it and flagged when high, because a median of
a noisy series is still a noisy number.
"""

from __future__ import annotations

import functools
import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass
class Summary:
    """Median, spread and count of a list of samples (any unit)."""

    n: int
    median: float
    mean: float
    minimum: float
    maximum: float
    stdev: float
    cv: float  # stdev / mean, as a fraction (0.01 = 1 %)


def summarize(samples: Sequence[float]) -> Summary:
    """Summary of samples; ValueError when there are none."""
    values = [float(x) for x in samples]
    if not values:
        raise ValueError("no samples to summarize")
    mean = statistics.fmean(values)
    stdev = statistics.stdev(values) if len(values) > 1 else 0.0
    cv = stdev / mean if mean else 0.0
    return Summary(
        n=len(values),
        median=statistics.median(values),
        mean=mean,
        minimum=min(values),
        maximum=max(values),
        stdev=stdev,
        cv=cv,
    )


@dataclass
class LoopSettings:
    """How long to warm up and how many samples to take (the job's timing params)."""

    warmup_s: float = 0.2
    warmup_min_calls: int = 3
    min_reps: int = 10
    max_reps: int = 1000
    target_cv: float = 0.01
    budget_s: float = 3.0
    min_time_s: float = 0.5
    min_sample_s: float = 1e-3
    max_inner: int = 10_000

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> LoopSettings:
        """The settings a job's params ask for."""
        return cls(
            warmup_s=float(params.get("warmup_s", cls.warmup_s)),
            warmup_min_calls=int(params.get("warmup_min_calls", cls.warmup_min_calls)),
            min_reps=int(params.get("min_reps", cls.min_reps)),
            max_reps=int(params.get("max_reps", cls.max_reps)),
            target_cv=float(params.get("target_cv", cls.target_cv)),
            budget_s=float(params.get("case_budget_s", cls.budget_s)),
            min_time_s=float(params.get("min_sampling_s", cls.min_time_s)),
            min_sample_s=float(params.get("min_sample_s", cls.min_sample_s)),
        )


@dataclass
class Timing:
    """What the loop measured: seconds per call for each sample, and how it stopped."""

    samples_s: list[float]
    inner: int  # calls per sample (the sample is the block time divided by this)
    warmup_calls: int
    stop_reason: str  # "cv", "budget" or "max_reps"
    wall_start: float  # time.time() when sampling began (for telemetry windows)
    wall_end: float

    @functools.cached_property
    def summary(self) -> Summary:
        """Statistics of the per-call times.

        Computed once: the samples are final when a Timing is made, and the
        runner reads the summary many times per case.
        """
        return summarize(self.samples_s)


BlockTimer = Callable[[int, int], list[float]]
"""``time_blocks(inner, count)``: run ``count`` blocks of ``inner`` back-to-back calls, with
no pause between the blocks, and return each block's elapsed seconds."""

BATCH_S = 0.05  # host-side bookkeeping happens once per batch of samples this long


def cpu_blocks(call: Callable[[], Any]) -> BlockTimer:
    """A block timer for synchronous (CPU) calls: perf_counter around each block."""

    def time_blocks(inner: int, count: int) -> list[float]:
        times = []
        for _ in range(count):
            t0 = time.perf_counter()
            for _ in range(inner):
                call()
            times.append(time.perf_counter() - t0)
        return times

    return time_blocks


def adaptive_loop(
    time_blocks: BlockTimer,
    settings: LoopSettings,
    *,
    clock: Callable[[], float] = time.perf_counter,
) -> Timing:
    """Warm up, pick a block size, then sample until stable or out of budget.

    ``time_blocks(inner, count)`` must run ``count`` blocks of ``inner`` calls
    and return the elapsed seconds *of the device work* of each block.
    Samples are taken in batches of about BATCH_S seconds with no pause in
    between, so that the device sees the same back-to-back load as a real
    workload (a pause after every sample lets a power-capped GPU cool and
    clock up, which flatters the figure). Sampling goes on for at least
    ``min_reps`` samples and ``min_time_s`` seconds (a sustained state, not a
    cold burst), then stops at the first of: CV at most ``target_cv``,
    ``budget_s`` spent, ``max_reps`` taken.
    """
    started = clock()
    per_call = max(time_blocks(1, 1)[0], 1e-9)
    warmup_calls = 1
    while warmup_calls < settings.warmup_min_calls or clock() - started < settings.warmup_s:
        count = max(1, min(1000, math.ceil(BATCH_S / per_call)))
        times = time_blocks(1, count)
        per_call = max(statistics.median(times), 1e-9)
        warmup_calls += count
        if warmup_calls >= 100_000:
            break
    inner = max(1, min(settings.max_inner, math.ceil(settings.min_sample_s / per_call)))

    samples: list[float] = []
    wall_start = time.time()
    sampling_started = clock()
    reason = "max_reps"
    while len(samples) < settings.max_reps:
        count = max(1, min(256, math.ceil(BATCH_S / (inner * per_call))))
        count = min(count, settings.max_reps - len(samples))
        samples.extend(t / inner for t in time_blocks(inner, count))
        elapsed = clock() - sampling_started
        if len(samples) >= settings.min_reps and elapsed >= min(
            settings.min_time_s, settings.budget_s
        ):
            if summarize(samples).cv <= settings.target_cv:
                reason = "cv"
                break
            if elapsed >= settings.budget_s:
                reason = "budget"
                break
    return Timing(
        samples_s=samples,
        inner=inner,
        warmup_calls=warmup_calls,
        stop_reason=reason,
        wall_start=wall_start,
        wall_end=time.time(),
    )


@dataclass(frozen=True)
class RatioInterval:
    """current / baseline of the medians, with a percentile-bootstrap interval.

    The plain-Python twin of results.stats.ratio_interval (which uses numpy): the stack
    runs where numpy may be missing, and a profile diff or a tuning's before/after must
    say how sure it is there too. low and high are None when a side has one sample.
    """

    value: float | None
    low: float | None
    high: float | None
    n_baseline: int
    n_current: int


def ratio_of_medians(
    baseline: Sequence[float],
    current: Sequence[float],
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    max_samples: int = 500,
) -> RatioInterval:
    """Median of ``current`` over median of ``baseline``, and its bootstrap interval.

    Each side is resampled on its own (the two series are independent runs), with a
    fixed seed so the same inputs give the same interval. Sides longer than
    ``max_samples`` are thinned evenly first, which keeps the pure-Python loop fast.
    """
    import random

    def clean(values: Sequence[float]) -> list[float]:
        kept = [float(v) for v in values if v is not None and math.isfinite(float(v))]
        if len(kept) > max_samples:
            step = len(kept) / max_samples
            kept = [kept[int(i * step)] for i in range(max_samples)]
        return kept

    a, b = clean(baseline), clean(current)
    if not a or not b or statistics.median(a) == 0:
        return RatioInterval(None, None, None, len(a), len(b))
    value = statistics.median(b) / statistics.median(a)
    if len(a) < 2 or len(b) < 2:
        return RatioInterval(value, None, None, len(a), len(b))
    rng = random.Random(seed)  # noqa: S311 - a seeded bootstrap, not a secret
    ratios = []
    for _ in range(resamples):
        med_a = statistics.median(rng.choices(a, k=len(a)))
        if med_a:
            ratios.append(statistics.median(rng.choices(b, k=len(b))) / med_a)
    if not ratios:
        return RatioInterval(value, None, None, len(a), len(b))
    ratios.sort()
    tail = (1 - confidence) / 2

    def pick(q: float) -> float:
        position = q * (len(ratios) - 1)
        low, high = math.floor(position), math.ceil(position)
        return ratios[low] + (ratios[high] - ratios[low]) * (position - low)

    return RatioInterval(value, pick(tail), pick(1 - tail), len(a), len(b))
