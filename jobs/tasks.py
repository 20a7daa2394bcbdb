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
