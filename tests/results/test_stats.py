"""Ratios of medians and their bootstrap intervals, on samples whose answer is known."""

from __future__ import annotations

import numpy as np

from results.stats import ratio_interval


def test_the_ratio_is_of_the_medians_current_over_baseline():
    r = ratio_interval([1.0, 2.0, 3.0, 100.0, 2.0], [4.0, 4.0, 4.0])
    assert r.value == 2.0


def test_the_interval_holds_the_true_ratio_of_two_noisy_populations():
    rng = np.random.default_rng(7)
    covered = 0
    for trial in range(200):
        base = rng.normal(100.0, 3.0, 30)
        cur = rng.normal(110.0, 3.0, 30)
        r = ratio_interval(base, cur, seed=trial, resamples=500)
        covered += r.low <= 1.10 <= r.high
    # A 95 % interval should cover the truth about 95 % of the time (percentile
    # bootstrap of medians runs a little narrow with 30 samples).
    assert 0.88 <= covered / 200 <= 0.99


def test_the_same_samples_give_the_same_interval_every_time():
    base, cur = [1.0, 1.1, 0.9, 1.05], [1.2, 1.3, 1.25, 1.1]
    assert ratio_interval(base, cur) == ratio_interval(base, cur)


def test_one_sample_gives_a_ratio_without_an_interval():
    r = ratio_interval([2.0], [3.0])
    assert (r.value, r.low, r.high) == (1.5, None, None)


def test_no_samples_or_a_zero_baseline_give_no_ratio():
    assert ratio_interval([], [1.0]).value is None
    assert ratio_interval([0.0, 0.0], [1.0, 2.0]).value is None


def test_non_finite_samples_are_left_out():
    r = ratio_interval([1.0, float("nan"), 1.0], [2.0, float("inf"), 2.0])
    assert (r.value, r.n_baseline, r.n_current) == (2.0, 2, 2)
