"""A member makes a schedule in the portal; the beat fires it; its job runs and is listed."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from jobs.choices import LaunchType
from jobs.models import Schedule
from jobs.services.schedules import fire_due_schedules
from teams.choices import Role
from tests.browser.steps import sign_in
from tests.factories import add_member, make_team, make_user
from tests.workers import wait_for_status

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]


def test_a_member_creates_a_schedule_whose_fired_job_shows_on_its_page(page):
    team = make_team("Benchmarks")
    user = make_user("dana", password="correct horse battery")
    add_member(team, user, Role.MEMBER)
    sign_in(page, "dana", "correct horse battery")

    page.click("nav >> text=Schedules")
    page.click("text=New schedule")
    page.fill("#id_name", "nightly noop")
    page.select_option("#id_kind", "noop")
    page.fill("#id_params", '{"seconds": 0}')
    page.fill("#id_cron", "0 25 * * *")  # no such hour: refused beside the field
    page.fill("#id_time_zone", "Europe/Berlin")
    page.click("#schedule-form button[type=submit]")
    assert "Bad hour field" in page.inner_text("#schedule-form")
    page.fill("#id_cron", "30 2 * * *")
    page.click("#schedule-form button[type=submit]")

    page.wait_for_url("**/schedules/*/")
    schedule = Schedule.objects.get()
    assert schedule.created_by == user and schedule.time_zone == "Europe/Berlin"
    assert "02:30 CE" in page.inner_text("#next-run")  # CET or CEST: Berlin's clock

    # The beat's turn: the run is made due, fired once, and a real worker runs its job.
    Schedule.objects.filter(pk=schedule.pk).update(next_run_at=timezone.now() - timedelta(hours=3))
    [fired] = fire_due_schedules()
    job = wait_for_status(fired.job_id, {"succeeded"})
    assert job.launch_type == LaunchType.SCHEDULED and job.created_by == user

    page.reload()
    row = page.locator(f'#schedule-jobs tr[data-job="{job.pk}"]')
    assert row.locator('[data-status="succeeded"]').is_visible()
    page.click("#toggle")
    assert "disabled" in page.inner_text("#schedule-facts")
    page.goto("/schedules/")
    assert "disabled" in page.inner_text(f'tr[data-schedule="{schedule.pk}"] .state')
