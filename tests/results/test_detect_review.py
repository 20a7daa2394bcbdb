"""Found by a review of the verdict logic (0e0f7d1..d507ef0); each failed before its fix:
a lower-is-better case whose median fell to zero divided by zero and lost the whole job's
verdicts, and cases missing some runs hid that they drift together."""

from __future__ import annotations

import math

import numpy as np

from results.detect import CaseRuns, judge, lent_noise


def test_a_lower_is_better_case_whose_current_median_is_zero_is_judged():
    rng = np.random.default_rng(0)
    cases = {
        i: CaseRuns(
            list(100 * rng.lognormal(0, 0.01, 20)),
            list(100 * rng.lognormal(0, 0.01, 20)),
            {j: float(100 * rng.lognormal(0, 0.02)) for j in range(10)},
            higher_is_better=False,
        )
        for i in range(4)
    }
    cases["zero"] = CaseRuns(
        list(100 * rng.lognormal(0, 0.01, 20)), [0.0] * 20, {}, higher_is_better=False
    )
    decisions = judge(cases)
    assert set(decisions) == set(cases)
    assert decisions["zero"].verdict != "regressed"  # 100 -> 0 of a lower-is-better metric


def _correlated(cases: int, runs: int, seed: int = 3) -> list[dict[int, float]]:
    """Cases that move together run by run (one clock slows the whole run): rho ~ 0.8."""
    rng = np.random.default_rng(seed)
    common = rng.standard_normal(runs)
    return [
        {
            j: float(100 * math.exp(0.02 * (0.9 * common[j] + 0.44 * rng.standard_normal())))
            for j in range(runs)
        }
        for _ in range(cases)
    ]


def test_cases_missing_some_runs_lend_no_more_than_with_every_run():
    full = _correlated(50, 30)
    complete = lent_noise(full)
    some_missing = lent_noise(
        [{j: v for j, v in h.items() if (j + i) % 3} for i, h in enumerate(full)]
    )
    assert complete is not None and some_missing is not None
    assert some_missing.df < 2 * complete.df
