"""The job page's status line: the runner's progress while it runs, the final state once
it has ended (issue 36: "Succeeded asking torch")."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from jobs.choices import JobStatus
from jobs.services.run import DatabaseHooks
from tests.factories import make_job


def _status_line(html: str) -> str:
    match = re.search(r'<div id="job-status"[^>]*>(.*?)</div>', html, re.S)
    assert match, "no status line on the page"
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", match[1])).strip()


def _progress(job, message: str) -> None:
    """The progress event as the worker writes it while the runner runs."""
    hooks = DatabaseHooks(job)
    hooks.on_event({"event": "progress", "pct": 40, "message": message})
    hooks.flush()


@pytest.mark.parametrize("end", [JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELED])
def test_an_ended_job_shows_its_final_state_not_the_last_progress_line(member_client, team, end):
    job = make_job(team, status=JobStatus.RUNNING)
    _progress(job, "asking torch")
    page = member_client.get(reverse("portal:job-detail", args=[job.pk])).content.decode()
    assert "asking torch" in _status_line(page)

    if end == JobStatus.CANCELED:
        job.cancel("canceled by alice")
    else:
        job.finish(end, exit_code=0 if end == JobStatus.SUCCEEDED else 1)
    job.refresh_from_db()
    assert job.progress_message == "asking torch"  # the row keeps it; the page does not show it
    for url in ("portal:job-detail", "portal:job-log"):
        html = member_client.get(reverse(url, args=[job.pk])).content.decode()
        line = _status_line(html)
        assert "asking torch" not in line
        assert line.startswith(job.get_status_display())
        assert f"ended {job.finished_at:%Y-%m-%d}" in line
        assert f'title="{job.get_status_display()}"' in html
