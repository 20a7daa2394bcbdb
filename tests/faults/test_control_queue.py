"""The reaper has its own queue and process: a worker whose slots are all busy cannot delay it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from datetime import timedelta

import pytest
from django.utils import timezone

from jobs import services
from jobs.choices import JobStatus
from jobs.models import Job
from tests.faults.conftest import start_worker
from tests.workers import CELERY, ROOT, TERMINAL, wait_for_status, worker_env

pytestmark = [pytest.mark.faults, pytest.mark.integration, pytest.mark.slow]


def test_a_dead_job_is_reaped_within_an_interval_while_every_job_slot_is_busy(
    fault_worker, private_broker, settings, tmp_path, user, team
):
    busy = services.submit_job(
        user=user, kind="noop", params={"seconds": 120, "steps": 120}, team=team
    )
    busy2 = services.submit_job(
        user=user, kind="noop", params={"seconds": 120, "steps": 120}, team=team
    )
    wait_for_status(busy.pk, {JobStatus.RUNNING})
    wait_for_status(busy2.pk, {JobStatus.RUNNING})  # both of the worker's slots
    queue = settings.CELERY_TASK_DEFAULT_QUEUE
    env = {"ROCPATH_RUNNING_GRACE_S": "2", "ROCPATH_REAPER_INTERVAL_S": "1"}
    control = start_worker(
        settings,
        tmp_path,
        private_broker,
        name="control",
        queue=f"{queue}-control",
        concurrency=1,
        **env,
    )
    settings.CELERY_TASK_DEFAULT_QUEUE = "nowhere"
    dead = services.submit_job(user=user, kind="noop", params={}, team=team)
    Job.objects.filter(pk=dead.pk).update(
        status=JobStatus.RUNNING,
        worker="gone@nowhere",
        heartbeat_at=timezone.now() - timedelta(minutes=5),
    )
    log = (tmp_path / "beat.log").open("a")
    beat = subprocess.Popen(
        [CELERY, "-A", "config", "beat", "-s", str(tmp_path / "beat-schedule"), "-l", "INFO"],
        cwd=ROOT,
        env=worker_env(settings, ROCPATH_QUEUE=queue, CELERY_BROKER_URL=private_broker.url, **env),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        job = wait_for_status(dead.pk, TERMINAL, timeout=30)  # the busy jobs need 120 s
        assert job.status == JobStatus.ERRORED and job.error.startswith("worker lost"), job.error
        assert Job.objects.get(pk=busy.pk).status == JobStatus.RUNNING
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(beat.pid, signal.SIGKILL)
        beat.wait()
        control.stop()
