"""A person's path through the portal, in Debian's headless Chromium driven by Playwright."""

from __future__ import annotations

import pytest

from jobs.models import Job
from teams.choices import Role
from tests.browser.steps import sign_in
from tests.factories import add_member, make_team, make_user
from tests.waits import JOB_S

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]


def test_a_member_signs_in_submits_a_probe_and_watches_it_succeed(page):
    team = make_team("GPU Platform")
    user = make_user("bob", password="correct horse battery")
    add_member(team, user, Role.MEMBER)

    sign_in(page, "bob", "correct horse battery")
    page.click("text=Submit a job")
    page.select_option("#id_kind", "probe")
    page.click("form.card button[type=submit]")

    page.wait_for_url("**/jobs/*/")
    job = Job.objects.get()
    # The page updates itself (htmx polling) until the job ends, then reloads once.
    page.wait_for_selector('#job-status [data-status="succeeded"]', timeout=JOB_S * 1000)
    assert page.locator("#environment").is_visible()
    assert "logical cores" in page.inner_text("#environment")
    assert "rocminfo" in page.inner_text("#environment")
    log = page.inner_text("#log")
    assert "succeeded" in log
    job.refresh_from_db()
    assert job.status == "succeeded" and job.created_by == user

    page.goto("/")
    row = page.locator(f'tr[data-job="{job.pk}"]')
    assert row.locator('[data-status="succeeded"]').is_visible()


def test_a_long_job_can_be_canceled_from_its_page(page):
    team = make_team("Perf")
    user = make_user("carol", password="correct horse battery")
    add_member(team, user, Role.MEMBER)
    sign_in(page, "carol", "correct horse battery")
    page.goto("/jobs/new/")
    page.select_option("#id_kind", "noop")
    page.fill("#id_params", '{"seconds": 120, "steps": 120}')
    page.click("form.card button[type=submit]")
    page.wait_for_selector('#job-status [data-status="running"]', timeout=JOB_S * 1000)
    page.click("button.danger")
    page.wait_for_selector('#job-status [data-status="canceled"]', timeout=JOB_S * 1000)
    assert Job.objects.get().status == "canceled"
