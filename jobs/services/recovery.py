"""Recovery: end the jobs nobody is going to finish, remove the containers they left."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from jobs.choices import JobStatus
from jobs.models import Job
from jobs.services.cancel import revoke
from jobs.services.submit import queue_for

logger = logging.getLogger(__name__)


def reap_stuck_jobs() -> list[int]:
    """End jobs nobody is going to finish, each with the reason it was given up on."""
    now = timezone.now()
    reaped: list[int] = []
    running_grace = timedelta(seconds=settings.ROCPATH_RUNNING_GRACE_S)
    for job in Job.objects.filter(status=JobStatus.RUNNING, heartbeat_at__lt=now - running_grace):
        if job.fail_to_run(
            f"worker lost: no heartbeat from {job.worker or 'its worker'} since "
            f"{job.heartbeat_at:%Y-%m-%d %H:%M:%S} UTC (reaped after "
            f"{settings.ROCPATH_RUNNING_GRACE_S} s)"
        ):
            reaped.append(job.pk)
    queued_grace = timedelta(seconds=settings.ROCPATH_QUEUED_GRACE_S)
    for job in Job.objects.filter(status=JobStatus.QUEUED, queued_at__lt=now - queued_grace):
        if job.fail_to_run(
            f"no worker picked the job up within {settings.ROCPATH_QUEUED_GRACE_S} s "
            f"(queue {queue_for(job)!r}: is a worker listening on it?)"
        ):
            revoke(job.task_id)
            reaped.append(job.pk)
    for job in Job.objects.filter(status=JobStatus.PENDING, created_at__lt=now - queued_grace):
        if job.fail_to_run("the job was never handed to the queue (enqueue failed)"):
            reaped.append(job.pk)
    if reaped:
        logger.warning("reaped stuck jobs: %s", reaped)
    return reaped


def sweep_containers() -> list[str]:
    """Remove this host's job containers whose job is no longer running (a lost worker's)."""
    from jobs.executors.docker import job_ids_of_containers, remove_containers

    on_host = job_ids_of_containers()
    if not on_host:
        return []
    running = set(
        Job.objects.filter(pk__in=on_host, status=JobStatus.RUNNING).values_list("pk", flat=True)
    )
    return remove_containers(jobs=on_host - running)


def recover_worker_jobs(worker: str) -> list[int]:
    """A worker starting under a name ends the jobs its previous life left running."""
    ended = []
    for job in Job.objects.filter(status=JobStatus.RUNNING, worker=worker):
        if job.fail_to_run(f"worker lost: {worker} restarted while the job was running"):
            ended.append(job.pk)
    return ended
