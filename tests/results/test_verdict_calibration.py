"""The verdicts on jobs built from real H200 samples (docs/results/blas-bench-h200.json)
with run-to-run drift, as bench/calibrate.py measures them at scale (issue 39): the
cases of a job lend each other their noise, a real slowdown is never "unchanged", and
cases that drift together lend no more than one case would."""

from __future__ import annotations

import numpy as np
import pytest

from bench.calibrate import one_series, real_cases, run_factors
from results.detect import MAX_CV, CaseRuns, compare_samples, judge, lent_noise

POOL = real_cases()
# The cases whose samples can carry a verdict (within-run CV under MAX_CV): the others
# are "too noisy to conclude" whatever the run-to-run noise.
STEADY = [c for c in POOL if np.std(c["samples"], ddof=1) / np.mean(c["samples"]) < MAX_CV]


def verdicts(seed: int, *, cv: float, slowdown: float, shared: bool = False, series: int = 10):
    rng = np.random.default_rng(seed)
    out: list[str] = []
    for i in range(series):
        out += one_series(rng, STEADY, model="lognormal", cv=cv, shared=shared, history=10,
                          cases=16, slowdown=slowdown, seed=i)  # fmt: skip
    return out


def test_the_real_run_has_cases_to_judge_and_cases_too_noisy_to():
    assert len(POOL) == 63 and 40 <= len(STEADY) < 63


def test_ten_runs_catch_a_ten_percent_slowdown_at_1_5_percent_noise_with_the_cases_lending():
    out = verdicts(1, cv=0.015, slowdown=0.10)
    assert out.count("regressed") >= 0.95 * len(out)


def test_one_case_alone_with_ten_runs_needs_a_wider_threshold_than_the_job_lends():
    rng = np.random.default_rng(2)
    factors = run_factors(rng, "lognormal", 0.015, 12, 16, shared=False)
    cases = {}
    for col, case in enumerate(STEADY[:16]):
        runs = [rng.choice(case["samples"], 60) * factors[r, col] for r in range(12)]
        cases[col] = CaseRuns(
            list(runs[10]), list(runs[11]), {r: float(np.median(runs[r])) for r in range(10)}
        )
    lent = lent_noise([{**c.history, -1: float(np.median(c.baseline))} for c in cases.values()])
    assert lent is not None and lent.df > 50
    judged = judge(cases)
    alone = {k: compare_samples(c.baseline, c.current, history=list(c.history.values()))
             for k, c in cases.items()}  # fmt: skip
    # Each case's noise is now worth its own 10 df and what the others lent, so Student's
    # t no longer widens the threshold by a fifth: smaller on the whole, never on fewer df.
    assert all(judged[k].detail["run_noise_df"] > alone[k].detail["run_noise_df"] for k in cases)
    assert np.median([judged[k].detail["threshold"] for k in cases]) < np.median(
        [alone[k].detail["threshold"] for k in cases]
    )


@pytest.mark.parametrize("cv", [0.015, 0.03])
def test_a_real_ten_percent_slowdown_is_never_called_unchanged(cv):
    out = verdicts(3, cv=cv, slowdown=0.10)
    assert "unchanged" not in out


def test_an_unchanged_run_at_three_percent_noise_is_rarely_called_regressed():
    out = verdicts(4, cv=0.03, slowdown=0.0, series=20)
    assert out.count("regressed") + out.count("improved") <= 0.01 * len(out)
    # Most say what the noise allows: no 5 % change can be ruled out at 3 % run noise.
    assert out.count("inconclusive") > out.count("unchanged")


def test_cases_that_drift_together_lend_no_more_than_one_case_would():
    rng = np.random.default_rng(5)
    factors = run_factors(rng, "lognormal", 0.015, 11, 16, shared=True)
    histories = [
        {r: float(np.median(rng.choice(case["samples"], 60))) * factors[r, col] for r in range(11)}
        for col, case in enumerate(STEADY[:16])
    ]
    lent = lent_noise(histories)
    assert lent is None or lent.df <= 10
