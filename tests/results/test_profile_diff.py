"""Two profile jobs as stored, compared by the results layer: the sentence a regression
check prints, with results.stats' intervals."""

from __future__ import annotations

from results.profile_diff import diff_jobs, regression_note
from tests.portal.kinds.test_profile_pages import PROJECTION, stored_profile


def test_a_regression_check_is_told_which_kernel_and_by_how_much(team):
    baseline = stored_profile(team)
    current = stored_profile(team, 1.14, PROJECTION)
    note = regression_note(baseline, current)
    assert note.startswith(f"the regression is in `{PROJECTION}`, +14.0 % of its time a step")
    assert regression_note(baseline, baseline) is None


def test_the_intervals_are_results_stats_bootstrap_over_the_steps(team):
    baseline = stored_profile(team)
    current = stored_profile(team, 1.14, PROJECTION)
    kernels = diff_jobs(baseline, current, "ncu").kernels
    projection = next(k for k in kernels if k.name == PROJECTION)
    assert projection.basis == "step" and 1.10 < projection.low < 1.14 < projection.high < 1.18
