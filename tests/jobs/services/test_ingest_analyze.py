"""A bulk ingest leaves the planner statistics fresh: a history query planned on a
measurements table never analysed since thousands of rows came ran 617 s (issue 39)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from jobs.choices import JobStatus
from jobs.services.ingest import ingest_result
from stack.kinds import blas_bench
from tests.factories import make_job

pytestmark = pytest.mark.django_db

H200 = Path(__file__).resolve().parents[3] / "docs" / "results" / "blas-bench-h200.json"


def _analysed(team, settings, commits, threshold: int) -> list[str]:
    """The ANALYZE statements an ingest of the real H200 document (672 measurements) ran,
    the on-commit ones included."""
    settings.ROCPATH_ANALYZE_AFTER_ROWS = threshold
    job = make_job(team, kind=blas_bench.KIND.name, status=JobStatus.RUNNING, worker="w@h")
    document = json.loads(H200.read_text())
    with CaptureQueriesContext(connection) as seen, commits(execute=True), transaction.atomic():
        ingest_result(job, document, None, exit_code=0)
    return [q["sql"] for q in seen.captured_queries if q["sql"].startswith("ANALYZE")]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="ANALYZE is PostgreSQL's")
def test_a_job_past_the_threshold_has_the_measurements_table_analysed_after_commit(
    team, settings, django_capture_on_commit_callbacks
):
    analysed = _analysed(team, settings, django_capture_on_commit_callbacks, threshold=500)
    assert analysed == ['ANALYZE "jobs_measurement"']


def test_a_small_job_does_not(team, settings, django_capture_on_commit_callbacks):
    assert _analysed(team, settings, django_capture_on_commit_callbacks, threshold=1000) == []
