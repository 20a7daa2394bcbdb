"""The detector on series whose answer is known: A/A noise, planted slowdowns, steps."""

from __future__ import annotations

import numpy as np
import pytest

from results.detect import change_points, compare_samples, mann_whitney_p


def _run(rng: np.random.Generator, level: float, n: int = 40, cv: float = 0.02) -> np.ndarray:
    """One run's samples: log-normal around a level, as timings are (a right tail)."""
    return level * rng.lognormal(0.0, cv, n)


@pytest.mark.slow
def test_a_aa_pair_is_almost_never_called_changed():
    rng = np.random.default_rng(1)
    changed = sum(
        compare_samples(_run(rng, 100.0), _run(rng, 100.0), seed=i).verdict
        in ("regressed", "improved")
        for i in range(300)
    )
    assert changed <= 3  # <= 1 %


def test_a_ten_percent_slowdown_of_a_rate_is_a_regression():
    rng = np.random.default_rng(2)
    caught = sum(
        compare_samples(_run(rng, 100.0), _run(rng, 100.0 / 1.10), seed=i).verdict == "regressed"
        for i in range(100)
    )
    assert caught >= 95


def test_a_slower_time_is_a_regression_when_lower_is_better():
    rng = np.random.default_rng(3)
    d = compare_samples(_run(rng, 1.0), _run(rng, 1.2), higher_is_better=False)
    assert d.verdict == "regressed"
    assert d.ratio.value == pytest.approx(1.2, rel=0.03)
    assert d.change < 0  # worse, in the better direction


def test_a_faster_rate_is_an_improvement():
    rng = np.random.default_rng(4)
    assert compare_samples(_run(rng, 100.0), _run(rng, 120.0)).verdict == "improved"


def test_a_significant_change_below_the_effect_threshold_is_unchanged():
    rng = np.random.default_rng(5)
    base, cur = _run(rng, 100.0, n=400, cv=0.002), _run(rng, 99.0, n=400, cv=0.002)
    d = compare_samples(base, cur)
    assert d.p_value < 1e-6  # a real 1 % change, certain ...
    assert d.verdict == "unchanged"  # ... but under the 3 % that counts


def test_samples_too_spread_to_decide_are_noisy_not_unchanged():
    rng = np.random.default_rng(6)
    d = compare_samples(_run(rng, 100.0, n=5, cv=0.06), _run(rng, 100.0, n=5, cv=0.06))
    assert d.verdict == "noisy"
    assert d.detail["reason"] == "interval too wide"


def test_a_high_cv_baseline_is_too_noisy_to_conclude_however_many_samples():
    # Two CPU runs of the same code 5 minutes apart, CVs of 29-95 %: with thousands of
    # samples the test called the drift between them certain ("regressed", p = 1e-9).
    rng = np.random.default_rng(7)
    baseline = _run(rng, 100.0, n=2000, cv=0.4)
    current = _run(rng, 90.0, n=2000, cv=0.4)
    assert compare_samples(baseline, current, max_cv=float("inf")).verdict == "regressed"
    d = compare_samples(baseline, current)
    assert d.verdict == "noisy" and d.detail["reason"].startswith("baseline too noisy (CV")
    # A change far past what the spread makes is still news.
    halved = _run(rng, 50.0, n=2000, cv=0.12)
    assert compare_samples(_run(rng, 100.0, n=2000, cv=0.12), halved).verdict == "regressed"


def test_one_sample_a_side_is_noisy_with_its_reason():
    d = compare_samples([1.0], [2.0])
    assert d.verdict == "noisy"
    assert d.detail["reason"] == "too few samples"


def test_identical_samples_tie_with_p_one():
    assert mann_whitney_p([3.0, 3.0], [3.0, 3.0]) == 1.0


@pytest.mark.slow
def test_an_aa_history_has_no_change_points():
    rng = np.random.default_rng(7)
    flagged = sum(bool(change_points(rng.lognormal(0.0, 0.03, 80))) for _ in range(100))
    assert flagged <= 2


@pytest.mark.slow
def test_a_ten_percent_step_is_found_where_it_happened():
    rng = np.random.default_rng(8)
    found = 0
    for _ in range(50):
        values = rng.lognormal(0.0, 0.02, 80)
        values[50:] /= 1.10
        cps = change_points(values)
        found += any(abs(c - 50) <= 2 for c in cps)
    assert found >= 48


def test_two_steps_give_two_change_points():
    rng = np.random.default_rng(9)
    values = np.r_[rng.normal(10, 0.1, 30), rng.normal(9, 0.1, 30), rng.normal(10, 0.1, 30)]
    assert change_points(values) == [30, 60]


def test_a_single_outlier_is_not_a_change_point():
    rng = np.random.default_rng(10)
    values = rng.normal(10, 0.1, 60)
    values[30] = 20
    assert change_points(values) == []


def test_indices_refer_to_the_history_as_given_with_its_gaps():
    values = [10.0] * 20 + [None, float("nan")] + [8.0] * 20
    assert change_points(values) == [22]


def test_a_short_history_has_no_change_points():
    assert change_points([1.0, 2.0, 3.0]) == []


def test_runs_that_vary_more_than_their_samples_say_make_a_pair_inconclusive_not_regressed():
    rng = np.random.default_rng(11)
    history = 100.0 * rng.lognormal(0.0, 0.15, 30)  # runs differ by ~15 % run to run
    d = compare_samples(_run(rng, 100.0), _run(rng, 88.0), history=history)
    assert d.p_value < 0.001  # the two runs' samples do differ ...
    assert d.verdict == "inconclusive"  # ... by less than runs of this scope differ anyway
    assert d.detail["detectable"] > 0.3  # and a change this case could see is large
    assert d.detail["reason"].startswith("a change under ")


def test_a_steady_history_keeps_a_ten_percent_slowdown_a_regression():
    rng = np.random.default_rng(12)
    caught = 0
    for i in range(50):
        history = 100.0 * rng.lognormal(0.0, 0.01, 30)
        d = compare_samples(_run(rng, 100.0), _run(rng, 100.0 / 1.1), history=history, seed=i)
        caught += d.verdict == "regressed"
    assert caught >= 48


def test_a_short_history_warns_and_its_few_runs_widen_the_threshold():
    d = compare_samples([1.0, 1.01, 0.99], [1.0, 1.02, 0.98], history=[1.0, 1.1])
    assert d.detail["run_noise_df"] == 2  # two earlier runs and the baseline's
    assert d.detail["warning"] == "3 runs of history: at least 5 tell this case's run-to-run noise"
    assert d.detail["threshold"] > 0.3  # Student's t at 2 df, not the normal's 2.6


def test_no_history_warns_and_a_certain_small_change_is_still_unchanged():
    rng = np.random.default_rng(5)
    d = compare_samples(_run(rng, 100.0, n=400, cv=0.002), _run(rng, 99.0, n=400, cv=0.002))
    assert d.detail["warning"].startswith("1 run of history")
    assert d.detail["run_noise"] is None and d.verdict == "unchanged"


@pytest.mark.parametrize("step", [203, 503, 777, 998 - 10])
def test_a_long_history_is_searched_coarsely_but_the_step_is_placed_to_the_run(step):
    """Within 2 runs, as the detector bench counts a hit: noise may make the run beside
    the planted step the cheaper split."""
    rng = np.random.default_rng(step)
    values = np.concatenate([rng.normal(100, 3, step), rng.normal(90, 3, 1000 - step)])
    (found,) = change_points(list(values))
    assert abs(found - step) <= 2


def test_a_long_a_a_history_has_no_change_point():
    assert change_points(list(np.random.default_rng(5).normal(100, 3, 1000))) == []
