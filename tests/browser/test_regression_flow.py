"""A planted regression, from the baseline pinned in the browser to the dashboard."""

from __future__ import annotations

import pytest

from jobs.choices import JobStatus
from teams.choices import Role
from tests.browser.steps import sign_in
from tests.factories import add_member, make_project, make_team, make_user
from tests.results.helpers import environment, sampled_job

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]


def test_a_planted_regression_appears_on_the_dashboard(page):
    team = make_team("Perf")
    add_member(team, make_user("dora", password="correct horse battery"), Role.MEMBER)
    project, env = make_project(team, "GEMM tuning"), environment("box-1")
    base = sampled_job(team, project, env, level=100.0, seed=1)

    sign_in(page, "dora", "correct horse battery")
    page.goto(f"/jobs/{base.pk}/")
    page.click("#pin-baseline")
    page.wait_for_selector("text=is now the baseline of gemm")

    # The planted job: 15 % slower in every case. It ends the way a worker ends a job
    # (Job.finish); the job-finished receiver queues the comparison, the real worker runs it.
    slow = sampled_job(team, project, env, level=85.0, seed=2, status=JobStatus.RUNNING)
    slow.finish(JobStatus.SUCCEEDED)

    page.goto("/")
    for _ in range(100):  # the comparison runs in the worker: reload until it is there
        if page.locator("#open-regressions").count():
            break
        page.wait_for_timeout(200)
        page.reload()
    rows = page.locator("#open-regressions tbody tr")
    assert rows.count() == 2
    assert "GEMM tuning" in rows.first.inner_text()

    rows.first.locator(f'a[href="/jobs/{slow.pk}/#baseline"]').click()
    page.wait_for_url(f"**/jobs/{slow.pk}/#baseline")
    assert "2 regressed" in page.inner_text("#verdict-counts")
    page.click("#verdict-counts button")  # acknowledge
    page.goto("/")
    assert page.locator("#open-regressions").count() == 0
