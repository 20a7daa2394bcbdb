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
from typing import TYPE_CHECKING

from results.stats import Ratio, ratio_interval

if TYPE_CHECKING:
    import numpy as np

# numpy, scipy and ruptures cost about a second to import: they are imported in the
# functions that use them, so every process that loads the results app (the web server,
# each worker, beat, manage.py) does not pay for them before its first verdict.

# Shared by verdicts and change points; docs/regressions.md measured them.
ALPHA = 0.001  # Mann-Whitney U two-sided p below which a difference is significant
MIN_EFFECT = 0.03  # a relative change smaller than this is "unchanged" however certain
NOISY_WIDTH = 0.10  # an interval wider than this (high/low - 1) cannot decide
MIN_SEGMENT = 5  # the fewest runs a change-point segment may have
PENALTY_FACTOR = 4.0  # PELT penalty = factor x noise scale x log(n)
RUN_Z = 3.0  # a change must clear this many SDs of the difference of two runs
MIN_HISTORY = 5  # the fewest earlier runs that tell a scope's run-to-run noise
# A side whose samples spread more than this (coefficient of variation) cannot carry a
# verdict: two identical CPU runs with CVs of 29-95 % gave "regressed" at p = 1e-9.
MAX_CV = 0.10


@dataclass(frozen=True)
class Decision:
    """The verdict of current against baseline for one case + metric, with its numbers."""

    verdict: str  # results.models.VerdictKind value
    ratio: Ratio
    p_value: float | None
    change: float | None  # signed relative change in the "better" direction (+ = better)
    detail: dict = field(default_factory=dict)


def _clean(values: Sequence[float]) -> np.ndarray:
    import numpy as np

    arr = np.asarray([v for v in values if v is not None], dtype=float)
    return arr[np.isfinite(arr)]


def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Two-sided Mann-Whitney U p-value; None when a side is empty or all values tie."""
    import numpy as np
    from scipy.stats import mannwhitneyu

    x, y = _clean(a), _clean(b)
    if x.size == 0 or y.size == 0:
        return None
    if np.ptp(np.concatenate([x, y])) == 0:
        return 1.0
    return float(mannwhitneyu(x, y, alternative="two-sided").pvalue)


def run_noise(history: Sequence[float] | None) -> float | None:
    """The run-to-run spread of a scope: a robust SD (MAD) of the log of its run values.

    About the median, not between neighbours: a history that stepped (the machine or
    the stack changed) is noisier for it, and the verdicts say "noisy" rather than
    judge across the step. None with fewer than MIN_HISTORY runs: too few to say.
    """
    import numpy as np

    if history is None:
        return None
    x = _clean(history)
    x = x[x > 0]
    if x.size < MIN_HISTORY:
        return None
    logs = np.log(x)
    return float(np.median(np.abs(logs - np.median(logs)))) * 1.4826


def compare_samples(
    baseline: Sequence[float],
    current: Sequence[float],
    *,
    higher_is_better: bool = True,
    history: Sequence[float] | None = None,
    alpha: float = ALPHA,
    min_effect: float = MIN_EFFECT,
    noisy_width: float = NOISY_WIDTH,
    run_z: float = RUN_Z,
    max_cv: float = MAX_CV,
    seed: int = 0,
) -> Decision:
    """Decide improved / regressed / unchanged / noisy from two sets of raw samples.

    Samples of one run share that run's state (clocks, placement, neighbours), so two
    runs of the same code differ by more than their samples' spread says: a test on raw
    samples alone calls many A/A pairs significant. ``history`` (the values of earlier
    runs in the scope) measures that run-to-run noise; a change must then also clear
    ``run_z`` standard deviations of the difference of two runs.

    Regressed (or improved) needs all of: p < alpha, the ratio of medians past the
    threshold (the larger of min_effect and the run-to-run bound), and the whole 95 %
    interval on that side of 1. Otherwise "noisy" when the interval or the run-to-run
    bound is wider than noisy_width (a change of that size could hide in it), else
    "unchanged". With one sample a side there is no test to run: "noisy". A side whose
    samples spread past ``max_cv`` is "noisy" whatever the test says: with many samples
    a test calls a difference between two wide, skewed spreads certain.
    """
    import numpy as np

    r = ratio_interval(baseline, current, seed=seed)
    p = mann_whitney_p(baseline, current)
    # The baseline run's own level is part of what the current one is judged against.
    base = _clean(baseline)
    if history is not None and base.size:
        history = [*history, float(np.median(base))]
    s_run = run_noise(history)
    threshold = min_effect
    if s_run is not None:
        threshold = max(min_effect, float(np.expm1(run_z * np.sqrt(2.0) * s_run)))
    detail: dict = {
        "n_baseline": r.n_baseline,
        "n_current": r.n_current,
        "alpha": alpha,
        "threshold": threshold,
        "run_noise": s_run,
        "history_runs": 0 if history is None else len(history),
    }
    if r.value is None:
        return Decision("noisy", r, p, None, {**detail, "reason": "no comparable samples"})
    change = (r.value - 1.0) if higher_is_better else (1.0 / r.value - 1.0)
    for side, values in (("baseline", base), ("current", _clean(current))):
        cv = _cv(values)
        detail[f"cv_{side}"] = cv
        # Too noisy to conclude, unless the change is far past what that spread makes
        # (three CVs): a 2x slowdown at 12 % CV is news, a 10 % drift at 40 % is not.
        if cv is not None and cv > max_cv and abs(np.log(r.value)) < 3 * cv:
            return Decision(
                "noisy", r, p, change, {**detail, "reason": f"{side} too noisy (CV {cv:.0%})"}
            )
    if r.low is None or r.high is None or p is None:
        return Decision("noisy", r, p, change, {**detail, "reason": "too few samples"})
    width = r.high / r.low - 1.0 if r.low > 0 else float("inf")
    detail["interval_width"] = width
    moved_up = r.low > 1.0 and r.value - 1.0 >= threshold
    moved_down = r.high < 1.0 and 1.0 - 1.0 / (1.0 + threshold) <= 1.0 - r.value
    if p < alpha and (moved_up or moved_down):
        better = moved_up == higher_is_better
        return Decision("improved" if better else "regressed", r, p, change, detail)
    # Not a significant change past the threshold: "unchanged" only when a change of
    # noisy_width would have shown; otherwise the noise may hide one.
    if width > noisy_width:
        return Decision("noisy", r, p, change, {**detail, "reason": "interval too wide"})
    if threshold > noisy_width:
        return Decision("noisy", r, p, change, {**detail, "reason": "runs vary too much"})
    return Decision("unchanged", r, p, change, detail)


def _cv(x: np.ndarray) -> float | None:
    """The samples' coefficient of variation; None with fewer than two or a zero mean."""
    import numpy as np

    if x.size < 2 or float(np.mean(x)) == 0.0:
        return None
    return float(np.std(x, ddof=1) / abs(np.mean(x)))


def _noise_scale(x: np.ndarray) -> float:
    """Robust run-to-run spread: MAD of first differences / √2 (immune to level steps)."""
    import numpy as np

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
    import numpy as np

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
    # PELT with the L1 cost is about quadratic in the candidates (17 s for 1,000 runs
    # under load). Past LONG_SERIES runs it runs on the medians of blocks of JUMP runs
    # (0.2 s for 1,000), and each change point found is then placed exactly on the runs
    # themselves (_refine). (ruptures' own ``jump`` missed steps near the end.)
    # The L1 cost grows with |deviation|, i.e. linearly in sigma: so the penalty does too.
    penalty = penalty_factor * sigma * np.log(n)
    if n <= LONG_SERIES:
        bkps = _pelt(z, min_size, penalty)
    else:
        blocks = z[: n // JUMP * JUMP].reshape(-1, JUMP)
        coarse = np.median(blocks, axis=1)
        if n % JUMP:
            coarse = np.append(coarse, np.median(z[n // JUMP * JUMP :]))
        # a block median stands for JUMP runs: its L1 cost is 1/JUMP of theirs, and so
        # is the penalty, which keeps the full series' sensitivity (a step in the last
        # ten runs of a thousand is found as on the runs themselves)
        found = _pelt(coarse, max(2, -(-min_size // JUMP)), penalty / JUMP)
        bkps = _refine(z, [min(b * JUMP, n - min_size) for b in found], JUMP, min_size)
    confirmed = _confirm(z, list(bkps), alpha=alpha, min_effect=min_effect)
    return [int(keep[b]) for b in confirmed]


LONG_SERIES = 200
JUMP = 5


def _pelt(z: np.ndarray, min_size: int, penalty: float) -> list[int]:
    import ruptures

    algo = ruptures.Pelt(model="l1", min_size=min_size, jump=1).fit(z.reshape(-1, 1))
    return list(algo.predict(pen=penalty)[:-1])


def _refine(z: np.ndarray, bkps: list[int], jump: int, min_size: int) -> list[int]:
    """Each change point moved to the index within ``jump`` of it where splitting its two
    neighbouring segments costs least (L1 about each side's median): the exact place
    the coarse search could not see."""
    import numpy as np

    out: list[int] = []
    for i, b in enumerate(bkps):
        start = out[-1] if out else 0
        end = bkps[i + 1] if i + 1 < len(bkps) else z.size
        best, best_cost = b, None
        for c in range(max(start + min_size, b - jump + 1), min(end - min_size, b + jump - 1) + 1):
            left, right = z[start:c], z[c:end]
            cost = float(
                np.abs(left - np.median(left)).sum() + np.abs(right - np.median(right)).sum()
            )
            if best_cost is None or cost < best_cost:
                best, best_cost = c, cost
        out.append(best)
    return out


def _confirm(z: np.ndarray, bkps: list[int], *, alpha: float, min_effect: float) -> list[int]:
    """Drop candidates whose neighbouring segments are not significantly, largely apart.

    The weakest candidate goes first and the test is redone on the merged segments, so
    one spurious split does not hide behind another.
    """
    import numpy as np

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
