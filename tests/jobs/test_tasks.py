"""The job task's request in the worker's main process: what it does when the pool child
running a job is gone."""

from __future__ import annotations

import pytest
from celery.contrib.testing.mocks import TaskMessage

from config.celery import app
from jobs.choices import JobStatus
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
