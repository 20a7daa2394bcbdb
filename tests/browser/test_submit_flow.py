"""A person's path through the portal, in Debian's headless Chromium driven by Playwright."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

from jobs.models import Job
from portal.choices import Role
from tests.factories import add_member, make_team, make_user

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not os.path.exists(CHROMIUM):
        pytest.fail("Debian's chromium is not installed (.ci/run installs it)")
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; the ORM calls of the
    # test itself are still plain synchronous calls.
    with pytest.MonkeyPatch.context() as patch, sync_playwright() as playwright:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser, live_server, worker, settings, tmp_path):  # the worker runs the jobs
    settings.ALLOWED_HOSTS = ["localhost", "127.0.0.1"]
    context = browser.new_context(base_url=live_server.url)
    page = context.new_page()
    yield page
    page.screenshot(path=str(tmp_path / "last.png"))
    context.close()


def sign_in(page, username: str, password: str) -> None:
    page.goto("/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url("**/")


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
    page.wait_for_selector('#job-status [data-status="succeeded"]', timeout=60_000)
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
    page.wait_for_selector('#job-status [data-status="running"]', timeout=30_000)
    page.click("button.danger")
    page.wait_for_selector('#job-status [data-status="canceled"]', timeout=30_000)
    assert Job.objects.get().status == "canceled"
