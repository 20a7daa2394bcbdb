"""Regression detection: two samples against each other, and change points over history.

Two questions, one rule of evidence. A verdict (``compare_samples``) asks whether a
job's raw samples of one case differ from its baseline's; a change point
(``change_points``) asks where a series of per-run values over time steps to a new
level. Both answer "changed" only when a change is both *significant* (Mann-Whitney U,
which assumes no distribution: GPU timings are skewed and long-tailed) and *large*
(the effect is past a threshold, so a real but tiny 0.3 % drift from a driver update
does not page anyone), past what the case's run-to-run noise makes (its history,
moderated by what the job's other cases lend: ``judge``). "Unchanged" needs a 5 % change
ruled out; what neither flags nor rules out is "inconclusive", with the smallest change
the case could have flagged, and samples too spread to judge are "noisy": saying
nothing is better than a false all-clear.

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
MIN_HISTORY = 5  # the fewest earlier runs that tell a case's run-to-run noise on their own
# A side whose samples spread more than this (coefficient of variation) cannot carry a
# verdict: two identical CPU runs with CVs of 29-95 % gave "regressed" at p = 1e-9.
MAX_CV = 0.10
# The verdict's calibration (docs/regressions.md, bench/calibrate.py): the chance that
# run-to-run noise alone calls an unchanged case regressed, and as much improved. The
# threshold a change must clear is that quantile of Student's t (the noise is estimated)
# times the spread of the difference of two runs.
ALPHA_RUN = 0.001
# "Unchanged" says a change this large is ruled out (the change's 90 % interval lies
# within it); a case whose noise cannot rule it out is "inconclusive", never "unchanged".
UNCHANGED_WITHIN = 0.05
# ... at this one-sided level each way: heavy-tailed drift (Student-t(3) at 3 % CV) let
# one real 10 % slowdown of 1,600 through as "unchanged" at 0.05.
UNCHANGED_ALPHA = 0.025


@dataclass(frozen=True)
class Decision:
    """The verdict of current against baseline for one case + metric, with its numbers."""

    verdict: str  # results.models.VerdictKind value
    ratio: Ratio
    p_value: float | None
    change: float | None  # signed relative change in the "better" direction (+ = better)
    detail: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Noise:
    """Run-to-run noise: ``s`` the SD of the log of a case's per-run values, with ``df``
    degrees of freedom (what Student's t reads to widen a threshold for an estimate)."""

    s: float
    df: float


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


def _logs(values: Sequence[float] | None) -> np.ndarray:
    import numpy as np

    if values is None:
        return np.asarray([], dtype=float)
    x = _clean(values)
    return np.log(x[x > 0])


def run_noise(history: Sequence[float] | None) -> Noise | None:
    """A case's own run-to-run noise: the SD of the log of its run values (None under 3).

    The plain SD, not a robust one: an outlier run (a throttled clock, a neighbour's
    load) is what the next run may be too, and a MAD that ignored them let 8 % of A/A
    verdicts with 10 % outlier runs say "regressed" (issue 39). A history that stepped
    is noisier for it, so verdicts across a step turn inconclusive rather than wrong.
    """
    import numpy as np

    logs = _logs(history)
    if logs.size < 3:
        return None
    return Noise(float(np.std(logs, ddof=1)), float(logs.size - 1))


def _trigamma_inverse(y: float) -> float:
    """x with trigamma(x) = y (y > 0): Newton's method as limma's fitFDist solves it."""
    from scipy.special import polygamma

    x = 0.5 + 1.0 / y
    for _ in range(50):
        tri = float(polygamma(1, x))
        step = tri * (1.0 - tri / y) / float(polygamma(2, x))
        x += step
        if -step / x < 1e-8:
            break
    return x


def lent_noise(histories: Sequence[Sequence[float] | dict]) -> Noise | None:
    """What the cases of one job lend each other: a prior for each case's run-to-run noise
    (``s``) and the degrees of freedom it is worth (``df``), or None.

    Ten runs say little about one case's noise (Student's t at 10 df is 3.2 where the
    normal is 2.6, so a 10 % slowdown at 1.5 % run noise was caught 81 % of the time);
    the other cases of the job measured the same machine the same days. Their estimates
    are pooled as limma pools gene variances (Smyth 2004, the moments of log s²): where
    the cases' noise differs more than sampling explains, the prior is worth fewer df.
    When the cases move together run by run (one factor slows the whole run) they are
    not independent witnesses: the df lent are cut to the effective number of cases,
    n / (1 + (n - 1) x their mean correlation).

    ``histories``: per case, its run values in run order, or a {run id: value} mapping
    (then runs are matched by id for the correlation).
    """
    import numpy as np
    from scipy.special import digamma, polygamma

    series = [h if isinstance(h, dict) else dict(enumerate(h)) for h in histories]
    own = [(run_noise(list(h.values())), h) for h in series]
    own = [(n, h) for n, h in own if n is not None and n.s > 0]
    if len(own) < 3:
        return None
    d = np.asarray([n.df for n, _ in own])
    z = np.log(np.asarray([n.s**2 for n, _ in own]))
    e = z - digamma(d / 2) + np.log(d / 2)
    e_mean = float(np.mean(e))
    spread = float(np.var(e, ddof=1) - np.mean(polygamma(1, d / 2)))
    d0 = 2.0 * _trigamma_inverse(spread) if spread > 0 else float("inf")
    s0_sq = (
        float(np.exp(e_mean))
        if np.isinf(d0)
        else float(np.exp(e_mean + digamma(d0 / 2) - np.log(d0 / 2)))
    )
    # Kish's design effect from the cases' mean pairwise correlation over the runs, in
    # O(cases x runs) (a 4,000-case job has 8 million pairs): with each case's deviations
    # standardised, the square of their sum per run holds every pair's product once.
    runs = sorted(set().union(*(h.keys() for _, h in own)))
    col = {r: i for i, r in enumerate(runs)}
    std = np.zeros((len(own), len(runs)))
    for row, (_, h) in enumerate(own):
        pairs = [(col[r], v) for r, v in h.items() if v is not None and v > 0 and np.isfinite(v)]
        logs = np.log(np.asarray([v for _, v in pairs]))
        std[row, [c for c, _ in pairs]] = (logs - logs.mean()) / logs.std(ddof=1)
    per_run = std.sum(axis=0)
    same = float(np.sum(std**2))  # each case with itself: its runs - 1
    # Pairs are counted over the runs both cases have (a case missing a run adds nothing
    # there): m cases present in a run hold m(m - 1) ordered pairs. Standardised with
    # n - 1, a pair's products over its n common runs sum to (n - 1) x its correlation.
    present = (std != 0).sum(axis=0)
    mean_runs = float(np.mean([len(h) for _, h in own]))
    n_pairs = float(np.sum(present * (present - 1))) * (1.0 - 1.0 / max(2.0, mean_runs))
    rho = (float(np.sum(per_run**2)) - same) / n_pairs if n_pairs > 0 else 0.0
    rho = min(1.0, max(0.0, rho))
    n_eff = len(own) / (1.0 + (len(own) - 1) * rho)
    d0 = min(d0, max(0.0, n_eff - 1.0) * float(np.median(d)))
    if d0 < 1.0:
        return None
    return Noise(float(np.sqrt(s0_sq)), d0)


def _t(q: float, df: float | None) -> float:
    from scipy.stats import norm, t

    return float(norm.ppf(q) if df is None or df > 1e6 else t.ppf(q, df))


def compare_samples(
    baseline: Sequence[float],
    current: Sequence[float],
    *,
    higher_is_better: bool = True,
    history: Sequence[float] | None = None,
    lent: Noise | None = None,
    baseline_value: float | None = None,
    current_value: float | None = None,
    alpha: float = ALPHA,
    min_effect: float = MIN_EFFECT,
    noisy_width: float = NOISY_WIDTH,
    alpha_run: float = ALPHA_RUN,
    unchanged_within: float = UNCHANGED_WITHIN,
    max_cv: float = MAX_CV,
    seed: int = 0,
) -> Decision:
    """Decide improved / regressed / unchanged / inconclusive / noisy for one case.

    Samples of one run share that run's state (clocks, placement, neighbours), so two
    runs of the same code differ by more than their samples' spread says: a test on raw
    samples alone called half the A/A pairs of a busy machine changed. ``history`` (the
    case's values in earlier runs of the scope; the baseline's run is added) measures
    that run-to-run noise, moderated by what the job's other cases ``lent``
    (lent_noise); the difference of two runs spreads √2 times as much.

    - **regressed / improved**: p < alpha on the samples, the whole 95 % sample interval
      on one side of 1, and the ratio of medians past the threshold: the larger of
      min_effect and Student's t (1 - alpha_run) times that run-to-run spread (the
      chance A/A noise alone crosses it is alpha_run each way).
    - **unchanged**: the change's interval (the samples', widened by the run-level
      bound at UNCHANGED_ALPHA each way) lies within ±unchanged_within: a change that
      large is ruled out.
    - **inconclusive**: neither; ``detail["detectable"]`` is the smallest change this
      case could have flagged. Calling that "unchanged" shipped 11 % of real 10 %
      slowdowns as all-clear (issue 39).
    - **noisy** (too noisy to conclude): a side's samples spread past max_cv (unless the
      change is far past three CVs), fewer than two samples a side, or a sample
      interval wider than noisy_width.

    Under MIN_HISTORY runs of its own, ``detail["warning"]`` says so: the threshold then
    rests on what the other cases lent, or on the samples alone.
    """
    import numpy as np

    r = ratio_interval(baseline, current, seed=seed)
    p = mann_whitney_p(baseline, current)
    base = _clean(baseline)
    earlier = [] if history is None else list(history)
    # Each run's level as the history stores it (the measurement's value; the samples'
    # median when not given, as blas-bench reports it).
    if baseline_value is None and base.size:
        baseline_value = float(np.median(base))
    now = _clean(current)
    if current_value is None and now.size:
        current_value = float(np.median(now))
    runs = [*earlier, baseline_value] if baseline_value is not None else earlier
    own = run_noise(runs)
    noise = own
    if lent is not None:
        if own is None:
            noise = lent
        else:  # the moderated variance: own and lent, weighed by their df
            df = own.df + lent.df
            s_sq = (own.df * own.s**2 + lent.df * lent.s**2) / df if np.isfinite(df) else lent.s**2
            # Never below the job's typical noise: with ten runs a case that happened to
            # be quiet got a threshold its next run crossed by chance (t-tailed drift:
            # 1.1 % of A/A verdicts regressed; 0.6 % with this floor, detection alike).
            noise = Noise(float(np.sqrt(max(s_sq, lent.s**2))), df)
    # The run-level question: is this run off the level of the scope's runs (their mean,
    # the baseline's among them) by more than their noise? Judged against that level, not
    # the baseline's run alone: the difference spreads sqrt(1 + 1/n) times one run's, not
    # sqrt(2) times (a lucky or unlucky baseline run no longer shifts every verdict), and
    # the power that frees pays for a stricter alpha_run against heavy-tailed drift.
    run_logs = _logs(runs)
    reference = float(np.mean(run_logs)) if run_logs.size else None
    spread = None
    if noise is not None and reference is not None:
        spread = float(noise.s * np.sqrt(1.0 + 1.0 / run_logs.size))
    df = None if noise is None else noise.df
    threshold_log = float(np.log1p(min_effect))
    if spread is not None:
        threshold_log = max(threshold_log, _t(1.0 - alpha_run, df) * spread)
    threshold = float(np.expm1(threshold_log))
    history_runs = int(run_logs.size)
    detail: dict = {
        "n_baseline": r.n_baseline,
        "n_current": r.n_current,
        "alpha": alpha,
        "threshold": threshold,
        "detectable": threshold,
        "run_noise": None if noise is None else noise.s,
        "run_noise_df": df,
        "run_noise_lent_df": None if lent is None else lent.df,
        "history_runs": history_runs,
    }
    if history_runs < MIN_HISTORY:
        detail["warning"] = (
            f"{history_runs} run{'s' if history_runs != 1 else ''} of history: at least "
            f"{MIN_HISTORY} tell this case's run-to-run noise"
            + ("; the job's other cases lent theirs" if lent is not None else "")
        )
    if r.value is None:
        return Decision("noisy", r, p, None, {**detail, "reason": "no comparable samples"})
    if not r.value > 0 or not np.isfinite(r.value):  # a median of 0: no log ratio to judge
        detail["interval_width"] = None
        if r.value == 0 and higher_is_better and p is not None and p < alpha:
            return Decision("regressed", r, p, -1.0, {**detail, "reason": "fell to zero"})
        return Decision("noisy", r, p, None, {**detail, "reason": "a median of zero"})
    change = (r.value - 1.0) if higher_is_better else (1.0 / r.value - 1.0)
    for side, values in (("baseline", base), ("current", now)):
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
    d = float(np.log(r.value))
    d_run = d  # against the baseline alone when the runs' level is unknown
    if spread is not None and reference is not None and current_value and current_value > 0:
        d_run = float(np.log(current_value)) - reference
        detail["change_vs_runs"] = float(np.expm1(d_run))
    past = abs(d_run) >= threshold_log and abs(d) >= np.log1p(min_effect) and d * d_run > 0
    if p < alpha and past and (r.low > 1.0 or r.high < 1.0):
        better = (d > 0) == higher_is_better
        return Decision("improved" if better else "regressed", r, p, change, detail)
    if width > noisy_width:
        return Decision("noisy", r, p, change, {**detail, "reason": "interval too wide"})
    reach = 0.0 if spread is None else _t(1.0 - UNCHANGED_ALPHA, df) * spread
    low = min(np.log(r.low), d, d_run - reach)
    high = max(np.log(r.high), d, d_run + reach)
    band = float(np.log1p(unchanged_within))
    if -band < low and high < band:
        return Decision("unchanged", r, p, change, detail)
    return Decision(
        "inconclusive",
        r,
        p,
        change,
        {**detail, "reason": f"a change under {threshold:.1%} could not be seen"},
    )


@dataclass(frozen=True)
class CaseRuns:
    """One case + metric of a job to judge: its raw samples and the baseline's, and its
    values in the scope's earlier runs ({run id: value}; the baseline's run excluded, its
    samples' median stands for it)."""

    baseline: Sequence[float]
    current: Sequence[float]
    history: dict[int, float] = field(default_factory=dict)
    higher_is_better: bool = True
    baseline_value: float | None = None  # each run's level as history stores it
    current_value: float | None = None


def judge(cases: dict, *, seed: int = 0) -> dict:
    """Every case of one job and metric against its baseline, each case's run-to-run noise
    moderated by what the others lend (lent_noise): {key: Decision} for {key: CaseRuns}.
    The one entry point of the service and of the calibration bench, so the figures in
    docs/regressions.md are the verdicts users get."""
    import numpy as np

    baseline_run = -1  # the baseline's samples, as one more run of every case
    histories = []
    for c in cases.values():
        base = _clean(c.baseline)
        runs = dict(c.history)
        if c.baseline_value is not None:
            runs[baseline_run] = c.baseline_value
        elif base.size:
            runs[baseline_run] = float(np.median(base))
        histories.append(runs)
    lent = lent_noise(histories)
    return {
        key: compare_samples(
            c.baseline,
            c.current,
            higher_is_better=c.higher_is_better,
            history=list(c.history.values()),
            lent=lent,
            baseline_value=c.baseline_value,
            current_value=c.current_value,
            seed=seed,
        )
        for key, c in cases.items()
    }


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
