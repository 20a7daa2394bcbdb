"""Results' Celery tasks: thin, each loads its rows through a service."""

from __future__ import annotations

from celery import shared_task

from results import services


@shared_task(name="results.compare_job", ignore_result=True, time_limit=600)
def compare_job(job_id: int) -> int:
    """Compare a finished job with its baselines; the number of verdicts written."""
    return len(services.compare_job(job_id))
