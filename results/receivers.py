"""What results does when a job ends (jobs.finished.job_finished, sent after commit)."""

from __future__ import annotations

from django.conf import settings
from django.dispatch import receiver

from config.celery import queue_task
from jobs.choices import JobStatus
from jobs.finished import job_finished
from results import services


@receiver(job_finished, dispatch_uid="results.job_finished")
def on_job_finished(sender: object, *, job_id: int, status: str, **_: object) -> None:
    """Queue the comparison of a succeeded job that has a baseline in its scope.

    Queued, not run here: this runs in the worker right after the conclude commit, and a
    comparison bootstraps every case (milliseconds each, seconds for a full sweep). The
    conclude path pays one query and, only in a baseline's scope, one enqueue. On the
    comparisons' own queue (ROCPATH_COMPARE_QUEUE): forty of them after a sweep held a
    scheduled job 2.5 minutes on the job queue.
    """
    if status != JobStatus.SUCCEEDED:
        return
    if services.has_baseline_in_scope(job_id):
        queue_task("results.compare_job", job_id, queue=settings.ROCPATH_COMPARE_QUEUE)
