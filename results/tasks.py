"""Results' Celery tasks: thin, each loads its rows through a service (results.services,
results.alerts)."""

from __future__ import annotations

from celery import shared_task

from results import alerts, compare, services


@shared_task(
    name="results.deliver_alert",
    acks_late=True,
    ignore_result=True,
    # A try takes at most the HTTP timeout (connect and read) or the SMTP one.
    time_limit=alerts.try_lease_s(),
)
def deliver_alert(delivery_id: int) -> float | None:
    wait = alerts.deliver(delivery_id)
    if wait is not None:
        alerts.queue_again(delivery_id, wait)
    return wait


@shared_task(name="results.check_stalled_schedules", ignore_result=True)
def check_stalled_schedules() -> list[int]:
    """The beat's sweep of stalled schedules (lost deliveries: the dispatcher's)."""
    return alerts.check_stalled_schedules()


@shared_task(name="results.compare_job", ignore_result=True, time_limit=600)
def compare_job(job_id: int) -> int:
    """Compare a finished job with its baselines; the number of verdicts written.

    Then the change points of the histories the job extended (its first
    compare.WARM_CASES cases), so that their pages' first view finds them cached.
    """
    written = len(services.compare_job(job_id))
    compare.warm_histories(job_id)
    return written
