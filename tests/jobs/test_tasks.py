"""The job task's request in the worker's main process: what it does when the pool child
running a job is gone."""

from __future__ import annotations

import pytest
from celery.contrib.testing.mocks import TaskMessage
from django.db import OperationalError

from config.celery import app
from jobs import services
from jobs.choices import JobStatus
from jobs.services.run import LostMidRun
from jobs.tasks import RunJobRequest, run_job
from tests.factories import make_job


@pytest.mark.django_db(transaction=True)  # the request closes stale connections, as a worker's
def test_a_job_past_the_workers_hard_time_limit_is_ended_at_once_saying_so(team):
    # It stayed running until the reaper ended it, blaming a database or broker error.
    job = make_job(team, status=JobStatus.RUNNING, worker="w1@host", task_id="t1")
    message = TaskMessage(run_job.name, id="t1", args=[job.pk])
    request = RunJobRequest(message, app=app, task=run_job, hostname="w1@host")
    request.on_timeout(soft=False, timeout=4200.0)
    job.refresh_from_db()
    assert job.status == JobStatus.ERRORED
    assert job.error == (
        "worker lost: the process running the job on w1@host was killed mid-run by the "
        "worker's hard time limit of 4200 s (the job's own timeout did not stop it); "
        "the job was not run again"
    )


def test_a_soft_time_limit_ends_nothing(team):
    job = make_job(team, status=JobStatus.RUNNING, worker="w1@host", task_id="t1")
    message = TaskMessage(run_job.name, id="t1", args=[job.pk])
    RunJobRequest(message, app=app, task=run_job, hostname="w1@host").on_timeout(True, 60.0)
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING


def _tries(monkeypatch, first: BaseException) -> list[str]:
    """Run the task (eagerly) whose first try raises ``first``; each try's retry_of."""
    seen: list[str] = []

    def execute_job(job_id: int, *, worker: str, task_id: str, retry_of: str) -> str:
        seen.append(retry_of)
        if len(seen) == 1:
            raise first
        return "done"

    monkeypatch.setattr(services, "execute_job", execute_job)
    assert run_job.apply(args=[1], task_id="t1").get() == "done"
    return seen


def test_a_try_that_lost_the_database_before_claiming_tells_the_next_nothing(monkeypatch):
    # The message Celery put back after a pool child was killed met a database outage at
    # its first query; its next try took the job the killed child ran for its own (same
    # task id, "running") and queued it again: a killed process run again (CI, 1 of 2).
    assert _tries(monkeypatch, OperationalError("the database is down")) == ["", ""]


def test_a_try_that_lost_the_database_after_claiming_tells_the_next_why(monkeypatch):
    lost = LostMidRun(OperationalError("server closed the connection"))
    assert _tries(monkeypatch, lost) == ["", "OperationalError: server closed the connection"]
