"""When a control-queue task last ran: the control worker's beat, read by ``/healthz``.

The control worker (``celery -A config worker -Q <ROCPATH_CONTROL_QUEUE> -c 1``) runs the
dispatcher, the reaper and the schedule firing; while it (or celery beat) is down nothing
queues pending jobs and nothing reaps a stuck one, yet the web answers as usual. Each of
those tasks writes its row here as it starts, so the web, another process, can tell how
long ago the control queue was last served. A row in the database, not process memory:
the web and the worker share nothing else on the embedded defaults (SQLite) and on
PostgreSQL alike.
"""

from __future__ import annotations

from datetime import datetime

from django.db import IntegrityError, models, transaction
from django.utils import timezone


class ControlBeat(models.Model):
    """One control-queue task's last start (one row per task name, updated in place)."""

    task = models.CharField(max_length=200, unique=True, help_text="the Celery task's name")
    at = models.DateTimeField(default=timezone.now, help_text="when it last started")
    worker = models.CharField(max_length=200, blank=True, help_text="Celery's node name")

    def __str__(self) -> str:
        return f"{self.task} at {self.at:%Y-%m-%d %H:%M:%S}"


def record_beat(task: str, worker: str = "") -> None:
    """Stamp ``task`` as started now: one UPDATE, an INSERT the first time only."""
    now = timezone.now()
    if ControlBeat.objects.filter(task=task).update(at=now, worker=worker):
        return
    try:
        with transaction.atomic():
            ControlBeat.objects.create(task=task, at=now, worker=worker)
    except IntegrityError:  # a second control worker inserted it first: update theirs
        ControlBeat.objects.filter(task=task).update(at=now, worker=worker)


def last_beat() -> datetime | None:
    """The newest start of any control-queue task, or None before the first."""
    return ControlBeat.objects.aggregate(last=models.Max("at"))["last"]
