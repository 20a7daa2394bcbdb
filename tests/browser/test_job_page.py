"""A benchmark's job page in Chromium: charts drawn, the table folded and paged, the CSV
downloaded and read back."""

from __future__ import annotations

import csv

import pytest
from django.utils import timezone

from jobs.choices import JobStatus
from jobs.models import Measurement
from stack.blas.gemm import FAMILY as GEMM
from stack.kinds.blas_bench import KIND
from teams.choices import Role
from tests.browser.steps import sign_in
from tests.factories import add_member, make_job, make_team, make_user

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]


def test_a_sweeps_page_folds_pages_and_downloads_its_measurements(page, tmp_path):
    team = make_team("Bench")
    user = make_user("erin", password="correct horse battery")
    add_member(team, user, Role.MEMBER)
    job = make_job(team, kind=KIND.name, status=JobStatus.SUCCEEDED, finished_at=timezone.now())
    Measurement.objects.bulk_create(
        Measurement(
            job=job,
            benchmark=GEMM,
            case={"backend": "torch", "precision": p, "m": n, "n": n, "k": n},
            metric="throughput",
            unit="TOPS" if p == "int8" else "TFLOP/s",
            value=n / 100,
            samples=[n / 100] * 3,
            better="higher",
        )
        for p in ("bf16", "int8")
        for n in range(256, 256 + 64 * 40, 64)
    )
    sign_in(page, "erin", "correct horse battery")
    page.goto(f"/jobs/{job.pk}/")
    assert page.locator(".chart svg").count() == 2  # TFLOP/s and TOPS apart
    table = page.locator("#measurements table")
    assert not table.is_visible()  # folded
    page.click("#measurements summary")
    assert table.is_visible() and table.locator("tbody tr").count() == 50
    page.click("#measurements nav.pager >> text=next →")
    page.wait_for_url("**/?page=2#measurements")
    assert page.locator("#measurements table").is_visible()  # open once paging
    with page.expect_download() as info:
        page.click("#measurements .downloads >> text=CSV")
    path = tmp_path / "m.csv"
    info.value.save_as(path)
    with path.open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 80 and {r["unit"] for r in rows} == {"TFLOP/s", "TOPS"}
