"""Picking two jobs on the dashboard and comparing them, in Debian's headless Chromium."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from jobs.choices import JobStatus
from teams.choices import Role
from tests.browser.steps import sign_in
from tests.factories import (
    add_member,
    make_environment,
    make_job,
    make_sampled_measurement,
    make_team,
    make_user,
)

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]


def test_a_member_picks_two_jobs_compares_them_sees_the_chart_and_downloads_the_csv(page):
    team = make_team("GPU Platform")
    add_member(team, make_user("dana", password="correct horse battery"), Role.MEMBER)
    h200 = make_job(team, status=JobStatus.SUCCEEDED, environment=make_environment())
    mi300 = make_job(
        team, status=JobStatus.SUCCEEDED, environment=make_environment("MI300X", "amd", "gfx942")
    )
    for m in (1024, 2048, 4096):
        make_sampled_measurement(h200, 10.0 * m / 1024, [9.9, 10.0, 10.1], m=m, precision="fp16")
        make_sampled_measurement(mi300, 12.0 * m / 1024, [11.9, 12.0, 12.1], m=m, precision="fp16")
    make_job(team, status=JobStatus.SUCCEEDED)  # a third job, not ticked

    sign_in(page, "dana", "correct horse battery")
    page.check(f'tr[data-job="{h200.pk}"] input[type=checkbox]')
    page.check(f'tr[data-job="{mi300.pk}"] input[type=checkbox]')
    page.click("#compare-selected")

    page.wait_for_url("**/compare/?*")
    assert page.locator("#comparison tr[data-case]").count() == 3
    chart = page.locator(".chart svg").first
    assert chart.is_visible()
    assert chart.bounding_box()["height"] > 100
    assert "TFLOP/s" in chart.inner_html()
    assert "GPU model: MI300X vs H200" in page.inner_text("#columns")

    with page.expect_download() as caught:
        page.click("#download-csv")
    download = caught.value
    assert download.suggested_filename == "comparison.csv"
    with Path(download.path()).open(newline="") as f:
        lines = list(csv.DictReader(f))
    assert len(lines) == 6
    assert {line["job"] for line in lines} == {str(h200.pk), str(mi300.pk)}
    ratios = [float(line["ratio"]) for line in lines if line["job"] == str(mi300.pk)]
    assert ratios == pytest.approx([1.2, 1.2, 1.2])
