"""Worker faults: a pool child SIGKILLed mid-job (the main process: tests/integration)."""

from __future__ import annotations

import os
import signal
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from jobs import services
from jobs.choices import JobStatus
from jobs.models import Job
from jobs.services.submit import enqueue
from tests.faults.conftest import start_worker
from tests.waits import JOB_S
from tests.workers import (
    TERMINAL,
    children_of,
    group_alive,
    runner_group,
    wait_for_status,
    wait_until,
)

pytestmark = [pytest.mark.faults, pytest.mark.integration, pytest.mark.slow]


def test_a_pool_child_sigkilled_mid_job_ends_it_at_once_once_and_the_worker_runs_the_next(
    transactional_db, settings, tmp_path, private_broker, user, team
):
    """No reaper here: the worker's main process ends the job itself when Celery tells it
    the child was lost. Before, the job stayed running until the reaper came (60-180 s)
    and blamed "a database or broker error"."""
    settings.CELERY_TASK_DEFAULT_QUEUE = queue = "fault-pool-child"
    worker = start_worker(
        settings, tmp_path, private_broker, name=queue, queue=queue, concurrency=1
    )
    try:
        job_id = services.submit_job(
            user=user, kind="noop", params={"seconds": 60, "steps": 60}, team=team
        ).pk
        wait_for_status(job_id, {JobStatus.RUNNING})
        pgid = runner_group(job_id)
        (child,) = children_of(worker.proc.pid)  # one slot: the pool child running the job
        os.kill(child, signal.SIGKILL)
        killed_at = time.monotonic()

        ended = lambda: Job.objects.filter(pk=job_id, status=JobStatus.ERRORED).exists()  # noqa: E731
        assert wait_until(ended, 5, 0.1), Job.objects.get(pk=job_id).status
        assert time.monotonic() - killed_at <= 5
        job = Job.objects.get(pk=job_id)
        assert "was killed" in job.error and "SIGKILL" in job.error, job.error
        assert "database or broker" not in job.error, job.error
        assert job.attempt == 1, job.attempt
        assert job.events.filter(message__startswith="runner started").count() == 1
        assert wait_until(lambda: not group_alive(pgid), JOB_S), "the runner outlived it"

        after = wait_for_status(
            services.submit_job(user=user, kind="noop", params={}, team=team).pk,
            TERMINAL,
            timeout=JOB_S,
        )
        assert after.status == JobStatus.SUCCEEDED, after.error
        assert worker.proc.poll() is None, worker.log.read_text()[-3000:]
        job.refresh_from_db()
        assert job.status == JobStatus.ERRORED and job.attempt == 1  # never run again
        # Ended once: one move to errored (the message Celery put back found it ended).
        assert job.events.filter(message__startswith=JobStatus.ERRORED).count() == 1
    finally:
        worker.stop()


def test_a_job_waiting_in_a_sigkilled_workers_hands_is_sent_again_after_one_interval(
    fault_worker, private_broker, user, team, settings
):
    """A retry waits its countdown inside the worker that took it, unacknowledged (as a
    prefetched message waits for a slot); Redis would give it to another worker only after
    its visibility timeout (hours). The dispatcher sends it again once it has been queued
    for one dispatch interval, not ROCPATH_REDISPATCH_AFTER_S (120 s)."""
    job = services.submit_job(user=user, kind="noop", params={}, team=team)
    wait_for_status(job.pk, TERMINAL)
    Job.objects.filter(pk=job.pk).update(status=JobStatus.PENDING)  # a fresh start, then
    job.refresh_from_db()
    runs = job.events.filter(message__startswith="runner started").count()
    assert enqueue(job, countdown=60, note="a retry, as after a lost database")
    fault_worker.wait_for_log(f"[{job.task_id}] received")
    # Queued one interval ago: past the dispatcher's look, far short of the redispatch wait.
    one_interval = timedelta(seconds=settings.ROCPATH_DISPATCH_INTERVAL_S + 1)
    assert one_interval.total_seconds() < settings.ROCPATH_REDISPATCH_AFTER_S
    Job.objects.filter(pk=job.pk).update(queued_at=timezone.now() - one_interval)
    assert services.dispatch_jobs()["resent"] == []  # its live worker holds it: left alone

    fault_worker.sigkill_main_process()
    fault_worker.start()  # as a supervisor would: same name
    assert services.dispatch_jobs()["resent"] == [job.pk]
    job = wait_for_status(job.pk, {JobStatus.SUCCEEDED, *TERMINAL}, timeout=JOB_S)
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert job.events.filter(message__startswith="runner started").count() == runs + 1
    messages = list(job.events.values_list("message", flat=True))
    assert any("a worker took its message and is gone" in m for m in messages), messages
