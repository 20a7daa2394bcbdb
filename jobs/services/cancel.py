"""Cancel: a job not yet running ends at once, a running one is killed by its worker."""

from __future__ import annotations

import logging

from jobs.choices import EventKind, JobStatus
from jobs.models import IllegalTransition, Job, JobEvent

logger = logging.getLogger(__name__)


def cancel_job(job: Job, *, by: str) -> Job:
    """Cancel a job; a running one is killed by its worker, which then ends it."""
    for _ in range(3):
        if job.is_terminal:
            raise IllegalTransition(f"job {job.pk} already ended ({job.status})")
        if job.status in (JobStatus.PENDING, JobStatus.QUEUED):
            if job.cancel(f"canceled by {by}"):
                revoke(job.task_id)
                return job
        elif job.status == JobStatus.RUNNING:
            if job.request_cancel():
                JobEvent.objects.create(
                    job=job,
                    kind=EventKind.LOG,
                    level="warning",
                    message=f"cancel requested by {by}",
                )
            return job
        job.refresh_from_db()  # moved under us: look again
    return job


def revoke(task_id: str) -> None:
    """Ask the workers to drop a task not yet started (best effort)."""
    if not task_id:
        return
    from config.celery import app

    try:
        app.control.revoke(task_id)
    except Exception:  # revoke is an optimisation; the claim check is the guarantee
        logger.warning("could not broadcast revoke for task %s", task_id, exc_info=True)
