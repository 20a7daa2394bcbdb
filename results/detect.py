"""Regression detection: two samples against each other, and change points over history.

Two questions, one rule of evidence. A verdict (``compare_samples``) asks whether a
job's raw samples of one case differ from its baseline's; a change point
(``change_points``) asks where a series of per-run values over time steps to a new
level. Both answer "changed" only when a change is both *significant* (Mann-Whitney U,
which assumes no distribution: GPU timings are skewed and long-tailed) and *large*
(the effect is past a threshold, so a real but tiny 0.3 % drift from a driver update
does not page anyone). A comparison whose 95 % ratio interval is too wide to tell a
threshold-sized change from none is "noisy", never "unchanged": saying nothing is
better than a false all-clear.

Change points come from ruptures' PELT (exact for a penalised cost, O(n) in practice)
on a robust L1 cost, with a penalty scaled by a robust estimate of the run-to-run
noise; every candidate is then confirmed by the same test between the segments either
side of it, and unconfirmed ones are merged away. docs/regressions.md says why this
and not apache-otava, and what it measured.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import ruptures
from scipy.stats import mannwhitneyu

from results.stats import Ratio, ratio_interval

# Shared by verdicts and change points; docs/regressions.md measured them.
ALPHA = 0.001  # Mann-Whitney U two-sided p below which a difference is significant
MIN_EFFECT = 0.03  # a relative change smaller than this is "unchanged" however certain
NOISY_WIDTH = 0.10  # an interval wider than this (high/low - 1) cannot decide
MIN_SEGMENT = 5  # the fewest runs a change-point segment may have
PENALTY_FACTOR = 4.0  # PELT penalty = factor x noise scale x log(n)


@dataclass(frozen=True)
class Decision:
    """The verdict of current against baseline for one case + metric, with its numbers."""

    verdict: str  # results.models.VerdictKind value
    ratio: Ratio
    p_value: float | None
    change: float | None  # signed relative change in the "better" direction (+ = better)
    detail: dict = field(default_factory=dict)


def _clean(values: Sequence[float]) -> np.ndarray:
    arr = np.asarray([v for v in values if v is not None], dtype=float)
    return arr[np.isfinite(arr)]


def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Two-sided Mann-Whitney U p-value; None when a side is empty or all values tie."""
    x, y = _clean(a), _clean(b)
    if x.size == 0 or y.size == 0:
        return None
    if np.ptp(np.concatenate([x, y])) == 0:
        return 1.0
    return float(mannwhitneyu(x, y, alternative="two-sided").pvalue)


def compare_samples(
    baseline: Sequence[float],
    current: Sequence[float],
    *,
    higher_is_better: bool = True,
    alpha: float = ALPHA,
    min_effect: float = MIN_EFFECT,
    noisy_width: float = NOISY_WIDTH,
    seed: int = 0,
) -> Decision:
    """Decide improved / regressed / unchanged / noisy from two sets of raw samples.

    Regressed (or improved) needs three things at once: p < alpha, the ratio of
    medians past ±min_effect, and the whole 95 % interval on that side of 1. With one
    sample a side there is no test to run and the answer is "noisy".
    """
    r = ratio_interval(baseline, current, seed=seed)
    p = mann_whitney_p(baseline, current)
    detail: dict = {
        "n_baseline": r.n_baseline,
        "n_current": r.n_current,
        "alpha": alpha,
        "min_effect": min_effect,
    }
    if r.value is None:
        return Decision("noisy", r, p, None, {**detail, "reason": "no comparable samples"})
    change = (r.value - 1.0) if higher_is_better else (1.0 / r.value - 1.0)
    if r.low is None or r.high is None or p is None:
        return Decision("noisy", r, p, change, {**detail, "reason": "too few samples"})
    width = r.high / r.low - 1.0 if r.low > 0 else float("inf")
    detail["interval_width"] = width
    moved_up = r.low > 1.0 and r.value - 1.0 >= min_effect
    moved_down = r.high < 1.0 and 1.0 - r.value >= min_effect
    if p < alpha and (moved_up or moved_down):
        better = moved_up == higher_is_better
        return Decision("improved" if better else "regressed", r, p, change, detail)
    # Not a significant, large change: "unchanged" only when the interval is narrow
    # enough that a change of that size would have shown; otherwise noise hid it.
    if width > noisy_width:
        return Decision("noisy", r, p, change, {**detail, "reason": "interval too wide"})
    return Decision("unchanged", r, p, change, detail)


def _noise_scale(x: np.ndarray) -> float:
    """Robust run-to-run spread: MAD of first differences / √2 (immune to level steps)."""
    if x.size < 3:
        return 0.0
    d = np.diff(x)
    mad = float(np.median(np.abs(d - np.median(d)))) * 1.4826
    return mad / np.sqrt(2.0)


def change_points(
    values: Sequence[float],
    *,
    alpha: float = ALPHA,
    min_effect: float = MIN_EFFECT,
    min_size: int = MIN_SEGMENT,
    penalty_factor: float = PENALTY_FACTOR,
) -> list[int]:
    """Indices where a new segment starts in a history of per-run values (oldest first).

    An index i in the answer means values[i:] up to the next index sits at a level that
    differs from values[previous:i], significantly (Mann-Whitney U p < alpha) and by at
    least min_effect relative to the earlier segment's median. Non-finite values are
    ignored for detection but indices refer to the list as given.
    """
    raw = np.asarray([np.nan if v is None else v for v in values], dtype=float)
    keep = np.flatnonzero(np.isfinite(raw))
    x = raw[keep]
    n = x.size
    if n < 2 * min_size:
        return []
    level = float(np.median(np.abs(x))) or 1.0
    z = x / level  # scale-free: the penalty then means the same for µs and TFLOP/s
    sigma = _noise_scale(z)
    if sigma == 0.0:
        sigma = max(float(np.std(z)), 1e-9)
    algo = ruptures.Pelt(model="l1", min_size=min_size, jump=1).fit(z.reshape(-1, 1))
    # The L1 cost grows with |deviation|, i.e. linearly in sigma: so the penalty does too.
    bkps = algo.predict(pen=penalty_factor * sigma * np.log(n))[:-1]
    confirmed = _confirm(z, list(bkps), alpha=alpha, min_effect=min_effect)
    return [int(keep[b]) for b in confirmed]


def _confirm(z: np.ndarray, bkps: list[int], *, alpha: float, min_effect: float) -> list[int]:
    """Drop candidates whose neighbouring segments are not significantly, largely apart.

    The weakest candidate goes first and the test is redone on the merged segments, so
    one spurious split does not hide behind another.
    """
    bkps = sorted(bkps)
    while bkps:
        edges = [0, *bkps, z.size]
        worst, worst_score = None, None
        for i, b in enumerate(bkps):
            left, right = z[edges[i] : b], z[b : edges[i + 2]]
            p = mann_whitney_p(left, right)
            ml = float(np.median(left))
            effect = abs(float(np.median(right)) - ml) / abs(ml) if ml else float("inf")
            ok = p is not None and p < alpha and effect >= min_effect
            score = (ok, -(p if p is not None else 1.0))
            if not ok and (worst_score is None or score < worst_score):
                worst, worst_score = b, score
        if worst is None:
            return bkps
        bkps.remove(worst)
    return bkps
