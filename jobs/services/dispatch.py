"""Dispatch: the database says what must run, the broker only carries the news.

A job is pending until its message is sent, and goes back to pending when the broker
cannot be reached (submit.enqueue); the dispatcher, a periodic task on the control queue,
queues those once the broker answers. A queued job whose message the broker no longer
holds (Redis restarted without persistence) is sent again. Either way a duplicate message
is harmless: a worker claims a job with a conditional UPDATE, and a second message finds
it running or ended (services.run.execute_job).
"""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta

from django.conf import settings
from django.dispatch import Signal
from django.utils import timezone

from config.broker import broker_started_at, delivered_task_ids, task_ids_in_broker
from config.celery import app, queue_task
from jobs.choices import EventKind, JobStatus
from jobs.models import Job
from jobs.services.submit import RUN_TASK, enqueue, queue_for
from teams.sources import send_unsent

logger = logging.getLogger(__name__)

# Sent by each dispatch once the broker answers; a receiver sends again what of its own
# the broker lost and returns the ids (results.alerts: the deliveries).
broker_answered = Signal()
RESENT = "message sent again"  # the start of the log line a re-send writes (recovery reads it)
LOST_BY_BROKER = (
    "the broker no longer holds its message (a broker restart loses what it had not "
    "written to disk)"
)
LOST_BY_WORKER = (
    "a worker took its message and is gone (no live worker holds it; Redis would give it "
    "to another only after its visibility timeout)"
)


def dispatch_jobs() -> dict[str, list[int]]:
    """Queue the pending jobs and sources and re-send the queued jobs the broker lost;
    what was done."""
    done: dict[str, list[int]] = {"queued": [], "resent": [], "sources": [], "alerts": []}
    if not broker_answers():
        return done  # nothing can be sent: leave every job as it is, try next interval
    for job in Job.objects.filter(status=JobStatus.PENDING).order_by("created_at"):
        if enqueue(job, note="the broker is back: queued by the dispatcher"):
            done["queued"].append(job.pk)
    # A source snapshot's extraction or clone the broker could not take, the same way.
    done["sources"] = send_unsent()
    # And what the layers above lost with the broker (an alert's delivery): theirs to
    # send again, on this beat, every interval.
    # Robustly: their failure must not keep the jobs below from being sent again.
    for receiver, sent in broker_answered.send_robust(sender=dispatch_jobs):
        if isinstance(sent, Exception):
            logger.error("dispatcher: %r failed: %s", receiver, sent, exc_info=sent)
        else:
            done["alerts"] += sent or []
    queued = Job.objects.filter(status=JobStatus.QUEUED)
    now = timezone.now()
    # A job queued before the broker last started had its message in a server that is
    # gone: unless that one wrote it to disk it is lost, and waiting longer brings nothing
    # back. Looked at at once (a Redis restart's backlog waited 107-125 s before).
    lost_after = now - timedelta(seconds=settings.ROCPATH_REDISPATCH_AFTER_S)
    restarted = broker_started_at() if queued.exists() else None
    if restarted is not None and restarted > lost_after:
        lost_after = restarted
    stale = list(queued.filter(queued_at__lt=lost_after).order_by("queued_at"))
    if stale:
        held = task_ids_in_broker({queue_for(job) for job in stale})
        # A transport that keeps its messages (held is None) is never second-guessed.
        for job in stale if held is not None else []:
            if job.task_id not in held and resend(job, LOST_BY_BROKER):
                done["resent"].append(job.pk)
    # Delivered and never acknowledged, yet not held by any live worker: the worker that
    # took it (prefetched, or waiting out a retry's countdown) was killed, and Redis gives
    # it to another only after the visibility timeout, hours away. Looked at once a job
    # has been queued for one interval, not ROCPATH_REDISPATCH_AFTER_S: a delivered message
    # is in no backlog, so waiting longer only keeps the job waiting. The workers are
    # asked only when there are such jobs; a re-send to a worker that was merely slow to
    # answer is harmless (the claim is conditional).
    settled = list(
        queued.filter(
            queued_at__lt=now - timedelta(seconds=settings.ROCPATH_DISPATCH_INTERVAL_S)
        ).exclude(pk__in=done["resent"])
    )
    delivered = (delivered_task_ids() or set()) if settled else set()
    taken = [job for job in settled if job.task_id in delivered]
    alive = held_by_workers() if taken else None
    for job in taken if alive is not None else []:
        if job.task_id not in alive and resend(job, LOST_BY_WORKER):
            done["resent"].append(job.pk)
    if any(done.values()):
        logger.warning(
            "dispatcher: queued %s, sent again %s, sources sent %s, alerts sent again %s",
            done["queued"],
            done["resent"],
            done["sources"],
            done["alerts"],
        )
    return done


def resend(job: Job, why: str = LOST_BY_BROKER) -> bool:
    """Send a queued job's run again under a new task id; False when it moved meanwhile."""
    task_id = str(uuid.uuid4())
    changed = Job.objects.filter(pk=job.pk, status=JobStatus.QUEUED, task_id=job.task_id).update(
        task_id=task_id
    )
    if not changed:
        return False
    from jobs.models import JobEvent

    waited = (timezone.now() - job.queued_at).total_seconds() if job.queued_at else 0
    JobEvent.objects.create(
        job_id=job.pk,
        kind=EventKind.LOG,
        level="warning",
        message=f"{RESENT}: queued {waited:.0f} s ago and {why}",
    )
    job.task_id = task_id
    queue_task(
        RUN_TASK,
        job.pk,
        task_id=task_id,
        queue=queue_for(job),
        on_error=lambda exc: job.mark_pending(
            f"could not reach the job queue ({type(exc).__name__}: {exc}): kept pending"
        ),
    )
    return True


def held_by_workers(
    lists: tuple[str, ...] = ("scheduled", "reserved", "active"), workers: list[str] | None = None
) -> set[str] | None:
    """The task ids the live workers (or the named ones) hold: waiting for their time
    (scheduled), prefetched (reserved), running (active); None when they could not be
    asked. Asked in that order, so a task moving from one list to the next meanwhile is
    still seen (and a re-send would be harmless anyway)."""
    held = held_by_each_worker(lists, workers)
    return None if held is None else set().union(*held.values())


def held_by_each_worker(
    lists: tuple[str, ...], workers: list[str] | None = None
) -> dict[str, dict[str, float | None]] | None:
    """What each worker that answered every list holds: task id -> when it started running
    (epoch seconds; None while it waits). A worker that answered late, on a loaded host,
    is absent: not the same as one that holds nothing. None when the workers could not be
    asked."""
    try:
        inspect = app.control.inspect(destination=workers, timeout=1.0)
        replies = [getattr(inspect, name)() or {} for name in lists]
    except Exception:
        logger.warning("could not ask the workers what they hold", exc_info=True)
        return None
    answered = set.intersection(*(set(reply) for reply in replies)) if replies else set()
    return {
        worker: {
            str(task.get("id") or (task.get("request") or {}).get("id") or ""): task.get(
                "time_start"
            )
            for reply in replies
            for task in reply[worker]
        }
        for worker in answered
    }


def broker_answers() -> bool:
    try:
        with app.connection_for_write() as connection:
            connection.ensure_connection(max_retries=1, timeout=2)
    except Exception:
        logger.warning("dispatcher: the broker does not answer; trying again next interval")
        return False
    return True
