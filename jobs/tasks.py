"""Celery tasks: thin wrappers that load the row and call the service."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings

from jobs import services

logger = logging.getLogger(__name__)


@shared_task(
    name="jobs.run_job",
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    # The executor enforces each job's own timeout; this is the backstop.
    soft_time_limit=None,
    time_limit=settings.ROCPATH_JOB_TIMEOUT_MAX_S + 600,
)
def run_job(self, job_id: int) -> str:
    outcome = services.execute_job(job_id, worker=self.request.hostname or "unknown")
    logger.info("job %s: %s", job_id, outcome)
    return outcome


@shared_task(name="jobs.reap_stuck_jobs", ignore_result=True)
def reap_stuck_jobs() -> list[int]:
    reaped = services.reap_stuck_jobs()
    # Containers live on the hosts of the workers that started them: ask every worker.
    from config.celery import app

    try:
        app.control.broadcast("rocpath_sweep_containers")
    except Exception:
        logger.warning("could not broadcast the container sweep", exc_info=True)
    return reaped


@shared_task(name="jobs.noop_task", ignore_result=False)
def noop_task() -> None:
    """A bare task: the anchor of bench/dispatch.py (what Celery and the broker cost alone)."""


@shared_task(
    name="jobs.fetch_git_source",
    ignore_result=True,
    time_limit=settings.ROCPATH_GIT_TIMEOUT_S + 600,  # the clone stops itself before
)
def fetch_git_source(snapshot_id: int) -> None:
    """Clone a project's git source on a worker (the web process never waits on a clone)."""
    from portal.models import SourceSnapshot
    from portal.sources import clone

    snapshot = SourceSnapshot.objects.filter(pk=snapshot_id).first()
    if snapshot is not None and snapshot.status == SourceSnapshot.Status.PENDING:
        clone(snapshot)


@shared_task(name="jobs.extract_source", ignore_result=True, time_limit=3600)
def extract_source(snapshot_id: int) -> None:
    """Extract an uploaded archive on a worker (the web request only checked its members)."""
    from portal.sources import extract_upload

    extract_upload(snapshot_id)


@shared_task(name="jobs.reap_source_staging", ignore_result=True)
def reap_source_staging() -> list[str]:
    """Remove the staging a killed web process or worker left behind."""
    from portal.sources import reap_staging

    return reap_staging()
