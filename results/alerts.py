"""Alerts: telling a project's webhooks and e-mail recipients that something went wrong.

``notify(project, event, payload)`` is the one entry point. It writes the Alert and one
Delivery per target in the caller's transaction and queues each delivery after commit
(on ROCPATH_ALERT_QUEUE, a queue of their own: a full job queue cannot hold an alert
back, and a slow receiver holds one thread of the alert worker, never the control
queue's one slot, which runs the reaper, the dispatcher and the schedules). A delivery is
tried by ``deliver`` (the results.deliver_alert task): a passing failure (no answer, a
timeout, 408, 425, 429, 5xx, an SMTP error) is tried again after BASE, 2 BASE, 4 BASE …
seconds up to ROCPATH_ALERT_MAX_ATTEMPTS tries; anything else (a refused URL, a 3xx or
other 4xx) fails at once. Every try is a DeliveryAttempt row: the delivery log.

Three events reach it: ``regression_found`` (results.signals, sent by the baseline
check), a scheduled job that ended failed or errored (jobs' job-finished signal, after
commit), and a schedule that stopped running (``check_stalled_schedules``, a beat task).
"""

from __future__ import annotations

import json
import logging
import smtplib
import time
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.mail import BadHeaderError, EmailMessage
from django.db import transaction
from django.dispatch import receiver
from django.urls import reverse
from django.utils import timezone

from config.celery import queue_task
from jobs.choices import JobStatus, LaunchType
from jobs.finished import job_finished
from jobs.models import Job, Schedule
from jobs.services.dispatch import broker_answered
from results import webhooks
from results.alert_models import (
    UNFINISHED,
    Alert,
    AlertEvent,
    AlertSettings,
    Delivery,
    DeliveryAttempt,
    DeliveryChannel,
    DeliveryStatus,
    new_secret,
)
from results.models import Verdict, VerdictKind
from results.signals import regression_found
from teams.models import AdoptionProject

logger = logging.getLogger(__name__)

DELIVER_TASK = "results.deliver_alert"
RETRIED_STATUSES = frozenset({408, 425, 429}) | frozenset(range(500, 600))
FAILED_JOB_STATUSES = frozenset({JobStatus.FAILED, JobStatus.ERRORED})
# A delivery whose next try is this far overdue lost its message (a broker restart, a
# try killed mid-way): the dispatcher queues it again. A message merely late (a long
# alert queue) sent twice is harmless: each try is claimed once.
OVERDUE_S = 60
REGRESSIONS_LISTED = 50


# --- telling -----------------------------------------------------------------------
def notify(
    project: AdoptionProject | int,
    event: str,
    payload: dict[str, Any],
    *,
    dedupe_key: str | None = None,
) -> Alert | None:
    """Tell ``project``'s targets of ``event``; None when nobody is to be told.

    ``dedupe_key``: a check that may see one thing many times names it, and only the
    first call with that key alerts.
    """
    if event not in AlertEvent.values:
        raise ValueError(f"unknown alert event {event!r}; one of {', '.join(AlertEvent.values)}")
    project_id = project if isinstance(project, int) else project.pk
    config = AlertSettings.objects.filter(project_id=project_id).first()
    if config is None or not (config.webhook_urls or config.emails):
        return None
    if event != AlertEvent.TEST and not config.wants(event):
        return None
    with transaction.atomic():
        fields = {"project_id": project_id, "event": event, "payload": payload}
        if dedupe_key:
            alert, created = Alert.objects.get_or_create(dedupe_key=dedupe_key, defaults=fields)
            if not created:
                return None
        else:
            alert = Alert.objects.create(**fields)
        body = _body(alert, config)
        deliveries = [
            Delivery(alert=alert, channel=DeliveryChannel.WEBHOOK, target=url, body=body)
            for url in config.webhook_urls
        ]
        if config.emails:
            deliveries.append(
                Delivery(alert=alert, channel=DeliveryChannel.EMAIL, target=config.email_target)
            )
        for delivery in Delivery.objects.bulk_create(deliveries):
            _queue(delivery.pk)
    return alert


def _body(alert: Alert, config: AlertSettings) -> str:
    """The webhook body: the same bytes on every try, so the signature covers them."""
    return json.dumps(
        {
            "alert_id": alert.pk,
            "event": alert.event,
            "project": {"id": config.project_id, "name": config.project.name},
            "created_at": alert.created_at.isoformat(),
            "data": alert.payload,
        },
        sort_keys=True,
        separators=(",", ":"),
    )


def save_settings(
    project: AdoptionProject, *, webhook_urls: list[str], emails: list[str], events: list[str]
) -> AlertSettings:
    """Write a project's alert settings (validated by the caller: portal.alerts' form)."""
    config, _ = AlertSettings.objects.update_or_create(
        project=project,
        defaults={
            "webhook_urls": webhook_urls,
            "emails": emails,
            "events": [event for event in AlertEvent.values if event in events],
            "updated_at": timezone.now(),
        },
    )
    return config


def rotate_secret(config: AlertSettings) -> str:
    """A new signing secret; deliveries not yet tried are signed with it."""
    config.secret = new_secret()
    config.updated_at = timezone.now()
    config.save(update_fields=["secret", "updated_at"])
    return config.secret


class TooManyTests(Exception):
    """The project sent its test alerts for this hour; ``wait_s`` until the next may go."""

    def __init__(self, wait_s: int) -> None:
        super().__init__(f"too many test alerts: try again in {wait_s // 60 + 1} min")
        self.wait_s = wait_s


def send_test(config: AlertSettings) -> int:
    """A test alert to every target; how many targets it went to.

    At most ROCPATH_ALERT_TESTS_PER_HOUR per project (TooManyTests): each one is a try
    per target on the alert queue, and the button could be pressed in a loop.
    """
    hour_ago = timezone.now() - timedelta(hours=1)
    recent = list(
        Alert.objects.filter(
            project_id=config.project_id, event=AlertEvent.TEST, created_at__gte=hour_ago
        )
        .order_by("created_at")
        .values_list("created_at", flat=True)
    )
    if len(recent) >= settings.ROCPATH_ALERT_TESTS_PER_HOUR:
        oldest = recent[-settings.ROCPATH_ALERT_TESTS_PER_HOUR]
        raise TooManyTests(int((oldest - hour_ago).total_seconds()))
    alert = notify(
        config.project_id, AlertEvent.TEST, {"message": "a test alert from the alerts page"}
    )
    return alert.deliveries.count() if alert else 0


def queue_again(delivery_id: int, wait_s: float) -> None:
    """Queue the next try of a delivery, due in ``wait_s`` seconds."""
    _queue(delivery_id, countdown=wait_s)


def _queue(delivery_id: int, countdown: float | None = None) -> None:
    queue_task(DELIVER_TASK, delivery_id, queue=settings.ROCPATH_ALERT_QUEUE, countdown=countdown)


# --- delivering --------------------------------------------------------------------
def backoff_s(number: int, retry_after_s: float | None = None) -> float:
    """The wait after try ``number`` (1-based): BASE·2^(n-1), at least Retry-After, capped."""
    delay = settings.ROCPATH_ALERT_RETRY_BASE_S * 2 ** (number - 1)
    if retry_after_s is not None:
        delay = max(delay, retry_after_s)
    return float(min(delay, settings.ROCPATH_ALERT_RETRY_MAX_S))


def deliver(delivery_id: int) -> float | None:
    """Try a delivery once; the seconds until the next try when there is to be one.

    The try is claimed with a conditional UPDATE on the count of tries, so a message
    delivered twice sends once; a message that comes before its time (a duplicate of
    one that waits for it) does nothing.
    """
    delivery = Delivery.objects.select_related("alert__project").filter(pk=delivery_id).first()
    if delivery is None or delivery.status not in (DeliveryStatus.PENDING, DeliveryStatus.RETRYING):
        return None
    if delivery.next_attempt_at and delivery.next_attempt_at > timezone.now() + timedelta(
        seconds=1
    ):
        return None
    if delivery.attempts >= settings.ROCPATH_ALERT_MAX_ATTEMPTS:
        # Its tries were claimed and lost (their process killed before they recorded):
        # end it, instead of the overdue sweep sending it again every few minutes.
        Delivery.objects.filter(pk=delivery.pk, attempts=delivery.attempts).update(
            status=DeliveryStatus.FAILED, next_attempt_at=None
        )
        return None
    number = delivery.attempts + 1
    started = timezone.now()
    # The try's row is written with its claim: a try whose process is killed mid-way
    # (a receiver that hangs, a worker SIGKILLed) is counted, so it must be in the log
    # too, saying it did not finish (the replay found 4 tries and 3 rows).
    with transaction.atomic():
        # The claim holds the delivery for as long as a try can last: a duplicate message,
        # or the overdue sweep, finds it not due meanwhile and sends nothing twice.
        claimed = Delivery.objects.filter(
            pk=delivery.pk, attempts=delivery.attempts, status=delivery.status
        ).update(attempts=number, next_attempt_at=started + timedelta(seconds=try_lease_s()))
        if claimed:
            DeliveryAttempt.objects.create(
                delivery=delivery,
                number=number,
                started_at=started,
                finished_at=started,
                error=UNFINISHED,
            )
    if not claimed:
        return None
    try:
        if delivery.channel == DeliveryChannel.WEBHOOK:
            code, error, excerpt, passing, retry_after = _try_webhook(delivery)
        else:
            code, error, excerpt, passing, retry_after = _try_email(delivery)
    except Exception as exc:  # recorded as the try's answer, not left "unfinished"
        logger.exception("alert delivery %s: the try raised", delivery.pk)
        code, error, excerpt, passing, retry_after = (
            None,
            f"{type(exc).__name__}: {exc}",
            "",
            False,
            None,
        )
    finished = timezone.now()
    retry = passing and number < settings.ROCPATH_ALERT_MAX_ATTEMPTS
    wait = backoff_s(number, retry_after) if retry else None
    with transaction.atomic():
        DeliveryAttempt.objects.filter(delivery=delivery, number=number).update(
            finished_at=finished,
            status_code=code,
            error=error[:2000],
            response_excerpt=excerpt,
            will_retry=retry,
            retry_in_s=wait,
        )
        if not error:
            fields: dict[str, Any] = {"status": DeliveryStatus.DELIVERED, "delivered_at": finished}
        elif retry:
            fields = {
                "status": DeliveryStatus.RETRYING,
                "next_attempt_at": finished + timedelta(seconds=wait or 0),
            }
        else:
            fields = {"status": DeliveryStatus.FAILED, "next_attempt_at": None}
        Delivery.objects.filter(pk=delivery.pk).update(**fields)
    if error:
        logger.warning(
            "alert delivery %s (%s %s), try %s: %s%s",
            delivery.pk,
            delivery.channel,
            delivery.target[:200],
            number,
            error[:300],
            f"; next try in {wait:.0f} s" if retry else "; giving up",
        )
    return wait


def _try_webhook(delivery: Delivery) -> tuple[int | None, str, str, bool, float | None]:
    """(status code, error, response excerpt, whether a retry may help, Retry-After)."""
    config = AlertSettings.objects.filter(project_id=delivery.alert.project_id).first()
    if config is None:
        return None, "the project's alert settings are gone", "", False, None
    body = delivery.body.encode()
    stamp = int(time.time())
    headers = {
        "X-Rocpath-Event": delivery.alert.event,
        "X-Rocpath-Delivery": str(delivery.pk),
        "X-Rocpath-Timestamp": str(stamp),
        "X-Rocpath-Signature": webhooks.signature(config.secret, stamp, body),
    }
    try:
        answer = webhooks.post(delivery.target, body, headers)
    except webhooks.WebhookRefused as exc:
        return None, f"refused: {exc}", "", False, None
    except OSError as exc:  # refused, reset, timed out, DNS: the receiver may come back
        return None, f"{type(exc).__name__}: {exc}", "", True, None
    if 200 <= answer.status < 300:
        return answer.status, "", answer.excerpt, False, None
    passing = answer.status in RETRIED_STATUSES
    note = "" if passing else " (not retried: the receiver refused it)"
    if 300 <= answer.status < 400:
        note = " (redirects are not followed)"
    error = f"HTTP {answer.status}{note}"
    return answer.status, error, answer.excerpt, passing, answer.retry_after_s


def _try_email(delivery: Delivery) -> tuple[int | None, str, str, bool, float | None]:
    alert = delivery.alert
    label = AlertEvent(alert.event).label
    message = EmailMessage(
        subject=f"[rocpath] {alert.project.name}: {label}",
        body=_email_text(alert, label),
        to=[address for address in delivery.target.split(",") if address],
    )
    try:
        message.send(fail_silently=False)
    except BadHeaderError as exc:
        # A CR or LF in the subject (a project named before names were checked): every
        # try would fail alike, so the delivery ends here instead of retrying for ever.
        return None, f"BadHeaderError (not retried): {exc}", "", False, None
    except (smtplib.SMTPException, OSError) as exc:
        return None, f"{type(exc).__name__}: {exc}", "", True, None
    return None, "", "", False, None


def _email_text(alert: Alert, label: str) -> str:
    lines = [f"{label} in project {alert.project.name}.", ""]
    data = alert.payload
    if job := data.get("job"):
        lines.append(f"Job {job.get('id')} ({job.get('kind')}): {job.get('status')}")
        if job.get("path"):
            lines.append(f"  {job['path']}")
    if error := data.get("error"):
        lines.append(f"Error: {error}")
    if schedule := data.get("schedule"):
        lines.append(f"Schedule {schedule.get('id')} ({schedule.get('name')})")
        if due := schedule.get("next_run_at"):
            lines.append(f"  was due at {due}")
    if data.get("regressions"):
        count = data.get("cases", len(data["regressions"]))
        lines.append(f"{count} case{'' if count == 1 else 's'} regressed:")
    for item in data.get("regressions", [])[:20]:
        lines.append(
            f"- {item.get('benchmark')} {json.dumps(item.get('case'))}: "
            + "; ".join(
                f"{m.get('metric')} {m.get('baseline_value')} → {m.get('value')} "
                f"{m.get('unit', '')} (ratio {m.get('ratio')})"
                for m in item.get("metrics") or [item]
            )
            + (f" ({item['warning']})" if item.get("warning") else "")
        )
    lines += ["", "The whole event, as the webhooks receive it:", json.dumps(data, indent=2)]
    return "\n".join(lines)


@receiver(broker_answered, dispatch_uid="results.alerts.requeue_overdue")
def requeue_overdue(sender: object = None, **_: object) -> list[int]:
    """Queue again the deliveries whose next try is long overdue (their message was lost)."""
    cutoff = timezone.now() - timedelta(seconds=OVERDUE_S)
    ids = list(
        Delivery.objects.filter(
            status__in=(DeliveryStatus.PENDING, DeliveryStatus.RETRYING),
            created_at__lt=cutoff,
            attempts__lt=settings.ROCPATH_ALERT_MAX_ATTEMPTS,
        )
        .exclude(next_attempt_at__gte=cutoff)
        .values_list("pk", flat=True)[:500]
    )
    # Marked sent again now, so a queue that is merely slow gets one more message an
    # OVERDUE_S, not one every dispatch interval.
    Delivery.objects.filter(pk__in=ids).update(next_attempt_at=timezone.now())
    for delivery_id in ids:
        _queue(delivery_id)
    return ids


def try_lease_s() -> float:
    """The longest a try can last: the task's hard time limit (results.tasks)."""
    return max(settings.ROCPATH_ALERT_TIMEOUT_S, settings.EMAIL_TIMEOUT) * 3 + 30


# --- the events --------------------------------------------------------------------
def _job_facts(job: Job) -> dict[str, Any]:
    return {
        "id": job.pk,
        "kind": job.kind,
        "status": job.status,
        "launch_type": job.launch_type,
        "path": reverse("portal:job-detail", args=[job.pk]),
    }


def _project_id(job: Job) -> int | None:
    if job.project_id:
        return job.project_id
    return job.schedule.project_id if job.schedule else None


@receiver(regression_found, dispatch_uid="results.alerts.regression_found")
def on_regression_found(
    sender: object,
    *,
    job_id: int,
    verdicts: Iterable[Any] | None = None,
    verdict_ids: Iterable[int] | None = None,
    **_: object,
) -> Alert | None:
    """The baseline check sends ``verdict_ids`` (results.signals.announce_regressions)."""
    if verdicts is None:
        verdicts = verdict_ids
    job = Job.objects.select_related("schedule").filter(pk=job_id).first()
    if job is None or (project_id := _project_id(job)) is None:
        return None
    found = Verdict.objects.filter(
        job_id=job_id, verdict=VerdictKind.REGRESSED, acknowledged_at__isnull=True
    )
    if verdicts is not None:
        found = found.filter(pk__in=[getattr(v, "pk", v) for v in verdicts])
    rows = list(found.order_by("benchmark", "metric", "id"))
    if not rows:
        return None
    # One line per case, not per metric: a slower GEMM is slower in time, throughput and
    # % of peak alike, and 42 "regressions" for 14 cases read as three times the news.
    cases: dict[tuple, list] = {}
    for v in rows:
        cases.setdefault((v.benchmark, v.case_key), []).append(v)
    listed = list(cases.values())
    shown = [[_regression(v) for v in group] for group in listed[:REGRESSIONS_LISTED]]
    payload = {
        "job": _job_facts(job),
        "cases": len(listed),
        "regressions": [{**metrics[0], "metrics": metrics} for metrics in shown],
        "more": len(listed) > REGRESSIONS_LISTED,
    }
    return notify(project_id, AlertEvent.REGRESSION, payload)


def _regression(v: Any) -> dict[str, Any]:
    return {
        "verdict_id": v.pk,
        "benchmark": v.benchmark,
        "case": v.case,
        "metric": v.metric,
        "unit": v.unit,
        "baseline_job": v.baseline_job_id,
        "baseline_value": v.baseline_value,
        "value": v.value,
        "ratio": v.ratio,
        "ratio_low": v.ratio_low,
        "ratio_high": v.ratio_high,
        "p_value": v.p_value,
        # a regression on under MIN_HISTORY runs says so where it is read, the alert too
        "warning": (v.detail or {}).get("warning"),
    }


@receiver(job_finished, dispatch_uid="results.alerts.job_finished")
def on_job_finished(sender: object, *, job_id: int, status: str, **_: object) -> Alert | None:
    if status not in FAILED_JOB_STATUSES:
        return None
    job = (
        Job.objects.select_related("schedule")
        .filter(pk=job_id, launch_type=LaunchType.SCHEDULED)
        .first()
    )
    if job is None or (project_id := _project_id(job)) is None:
        return None
    payload = {
        "job": _job_facts(job),
        "error": (job.error or "").strip()[:500],
        "schedule": (
            {"id": job.schedule.pk, "name": job.schedule.name, "cron": job.schedule.cron}
            if job.schedule
            else None
        ),
    }
    return notify(project_id, AlertEvent.SCHEDULED_JOB_FAILED, payload)


def check_stalled_schedules() -> list[int]:
    """Alert once for each enabled schedule whose next run is well past due.

    The key is the schedule and the run it missed: a schedule that fires again and then
    stalls again is a new stall. A schedule without a project has nobody to tell.
    """
    now = timezone.now()
    stalled = list(
        Schedule.objects.filter(
            enabled=True,
            project__isnull=False,
            next_run_at__lt=now - timedelta(seconds=settings.ROCPATH_SCHEDULE_STALL_S),
        ).only("pk", "name", "cron", "time_zone", "project_id", "next_run_at", "last_run_at")
    )
    told = []
    for schedule in stalled:
        late = (now - schedule.next_run_at).total_seconds()
        payload = {
            "schedule": {
                "id": schedule.pk,
                "name": schedule.name,
                "cron": schedule.cron,
                "time_zone": schedule.time_zone,
                "next_run_at": schedule.next_run_at.isoformat(),
                "last_run_at": schedule.last_run_at.isoformat() if schedule.last_run_at else None,
            },
            "late_s": round(late),
        }
        key = f"schedule-stalled:{schedule.pk}:{schedule.next_run_at.isoformat()}"
        if notify(schedule.project_id, AlertEvent.SCHEDULE_STALLED, payload, dedupe_key=key):
            told.append(schedule.pk)
    return told
