"""Celery tasks of the results app: thin wrappers around results.alerts."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from results import alerts


@shared_task(
    name="results.deliver_alert",
    acks_late=True,
    ignore_result=True,
    # A try takes at most the HTTP timeout (connect and read) or the SMTP one.
    time_limit=max(settings.ROCPATH_ALERT_TIMEOUT_S, settings.EMAIL_TIMEOUT) * 3 + 30,
)
def deliver_alert(delivery_id: int) -> float | None:
    wait = alerts.deliver(delivery_id)
    if wait is not None:
        alerts.queue_again(delivery_id, wait)
    return wait


@shared_task(name="results.check_stalled_schedules", ignore_result=True)
def check_stalled_schedules() -> list[int]:
    """The beat's sweep: stalled schedules, and deliveries whose message was lost."""
    alerts.requeue_overdue()
    return alerts.check_stalled_schedules()
