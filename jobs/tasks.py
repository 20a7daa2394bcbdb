"""Celery tasks: thin wrappers that load the row and call the service."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings

from jobs import services
from jobs.services.ingest import DATABASE_ERRORS
from jobs.services.schedules import fire_due_schedules

logger = logging.getLogger(__name__)

DB_RETRY_BASE_S = 2  # then 4, 8, ... up to DB_RETRY_MAX_S, ROCPATH_DB_RETRIES times
DB_RETRY_MAX_S = 60


@shared_task(
    name="jobs.run_job",
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    # The executor enforces each job's own timeout; this is the backstop.
    soft_time_limit=None,
    time_limit=settings.ROCPATH_JOB_TIMEOUT_MAX_S + 600,
)
def run_job(self, job_id: int, retry_of: str = "") -> str:
    try:
        outcome = services.execute_job(
            job_id,
            worker=self.request.hostname or "unknown",
            task_id=self.request.id or "",
            retry_of=retry_of,
        )
    except DATABASE_ERRORS as exc:
        # A lost database (a restart, a dropped connection) must not leave the job queued
        # or running with nobody on it: try this task again once the database may be back,
        # telling the next try what happened. task_prerun drops the broken connection.
        retries = self.request.retries
        if retries >= settings.ROCPATH_DB_RETRIES:
            raise
        delay = min(DB_RETRY_BASE_S * 2**retries, DB_RETRY_MAX_S)
        logger.warning("job %s: database error, trying again in %s s: %s", job_id, delay, exc)
        raise self.retry(
            args=[job_id],
            kwargs={"retry_of": f"{type(exc).__name__}: {exc}"[:500]},
            countdown=delay,
            max_retries=settings.ROCPATH_DB_RETRIES,
        ) from exc
    logger.info("job %s: %s", job_id, outcome)
    return outcome


@shared_task(name="jobs.dispatch_jobs", ignore_result=True)
def dispatch_jobs() -> dict[str, list[int]]:
    return services.dispatch_jobs()


@shared_task(name="jobs.fire_schedules", ignore_result=True)
def fire_schedules() -> list[int]:
    """The due schedules' jobs (jobs.services.schedules); the ids of the jobs made."""
    return [f.job_id for f in fire_due_schedules() if f.job_id is not None]


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
