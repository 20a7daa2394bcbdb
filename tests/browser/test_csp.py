"""The pages pass their Content-Security-Policy in a real browser: no refused script, style
or asset while htmx polls, charts draw, and Swagger UI renders."""

from __future__ import annotations

import pytest

from jobs.choices import JobStatus
from teams.choices import Role
from tests.browser.steps import sign_in, watch
from tests.factories import (
    add_member,
    make_job,
    make_measurement,
    make_project,
    make_team,
    make_user,
)
from tests.waits import JOB_S

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]

# Runs before any page script (Playwright injects it past the CSP): every violation the
# browser reports lands in window.__csp.
WATCH = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__csp.push(`${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`);
});
"""


def _gemm_job(team):
    job = make_job(team, status=JobStatus.SUCCEEDED, kind="blas-bench")
    for size, value in ((1024, 10.0), (2048, 20.0), (4096, 30.0)):
        make_measurement(job, value, m=size, n=size, k=size, backend="numpy", precision="fp32")
    return job


def test_the_pages_htmx_charts_and_api_docs_raise_no_csp_violation(page):
    team = make_team("CSP")
    user = make_user("dave", password="correct horse battery")
    add_member(team, user, Role.MEMBER)
    project = make_project(team, "ported")
    chart_job = _gemm_job(team)
    seen = watch(page, WATCH)
    console, policies = seen.console, seen.policies
    violations: list[str] = []

    def collect() -> None:
        violations.extend(page.evaluate("window.__csp || []"))

    sign_in(page, "dave", "correct horse battery")
    collect()

    # A running job: its page polls the log and status fragments with htmx.
    page.goto("/jobs/new/")
    page.select_option("#id_kind", "noop")
    page.fill("#id_params", '{"seconds": 8, "steps": 8}')
    page.click("form.card button[type=submit]")
    page.wait_for_selector('#job-status [data-status="running"]', timeout=JOB_S * 1000)
    page.wait_for_timeout(2_500)  # a few polls
    collect()

    # The dashboard polls its rows while that job runs; its filter submits through rocpath.js.
    page.goto("/")
    page.wait_for_timeout(2_500)
    page.select_option("select[name=status]", "running")
    page.wait_for_url("**/?status=running")
    collect()

    # Charts: pygal's SVG keeps its style (the nonce lets it through).
    page.goto(f"/jobs/{chart_job.pk}/")
    page.wait_for_selector(".chart svg")
    fill = page.evaluate(
        "getComputedStyle(document.querySelector('.chart svg .plot .background')).fill"
    )
    assert fill == "rgb(255, 255, 255)"  # pygal's CSS applied (unstyled it would be black)
    collect()

    for path in (f"/projects/{project.pk}/", f"/projects/{project.pk}/porting/", "/projects/"):
        page.goto(path)
        collect()

    # Swagger UI, whose scripts and styles are all served from here.
    page.goto("/api/docs/")
    page.wait_for_selector(".swagger-ui .information-container", timeout=JOB_S * 1000)
    collect()
    page.goto("/account/token/")
    collect()

    # Every page came with the strict policy: passing it is not passing for want of one.
    assert policies and all(
        "script-src 'self';" in p or p.endswith("script-src 'self'") for p in policies
    ), policies
    refused = [m for m in console if "Refused to" in m or "Content Security Policy" in m]
    assert violations == [] and refused == [], (violations, refused)
