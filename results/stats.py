"""The statistics every comparison shares: a ratio of medians with a bootstrap interval.

A ratio, not a difference, because cases differ by orders of magnitude (a 64³ GEMM in
µs, an 8192³ one in ms) and "1.08 times the baseline" reads the same for both. Medians,
because GPU timings have long right tails (a clock ramp, a preempted launch) that move
a mean and not a median. The interval is a percentile bootstrap over the raw samples,
resampled independently on each side, with a fixed seed so a permalink shows the
same numbers every time it is opened.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

BOOTSTRAP_RESAMPLES = 2000
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Ratio:
    """current / baseline, the median of each; low and high bound the 95 % interval.

    low and high are None when a side has fewer than two samples: one value has no
    spread to resample, and an interval drawn from it would claim a certainty it lacks.
    """

    value: float | None
    low: float | None
    high: float | None
    n_baseline: int
    n_current: int


def _clean(samples: Sequence[float]) -> np.ndarray:
    import numpy as np

    values = np.asarray([s for s in samples if s is not None], dtype=float)
    return values[np.isfinite(values)]


def ratio_interval(
    baseline: Sequence[float],
    current: Sequence[float],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = 0,
) -> Ratio:
    """The ratio of medians current/baseline and its percentile-bootstrap interval."""
    import numpy as np

    a, b = _clean(baseline), _clean(current)
    if a.size == 0 or b.size == 0:
        return Ratio(None, None, None, int(a.size), int(b.size))
    base_median = float(np.median(a))
    if base_median == 0:
        return Ratio(None, None, None, int(a.size), int(b.size))
    value = float(np.median(b)) / base_median
    if a.size < 2 or b.size < 2:
        return Ratio(value, None, None, int(a.size), int(b.size))
    rng = np.random.default_rng(seed)
    med_a = np.median(a[rng.integers(0, a.size, size=(resamples, a.size))], axis=1)
    med_b = np.median(b[rng.integers(0, b.size, size=(resamples, b.size))], axis=1)
    keep = med_a != 0
    ratios = med_b[keep] / med_a[keep]
    if ratios.size == 0:
        return Ratio(value, None, None, int(a.size), int(b.size))
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return Ratio(value, float(low), float(high), int(a.size), int(b.size))
