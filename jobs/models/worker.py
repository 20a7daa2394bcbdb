"""A Celery worker of the fleet, as it last announced itself."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone


class Worker(models.Model):
    """One worker's announcement: what it runs jobs with, what it has, when it was last seen.

    Written by the worker itself, on start and on every beat (jobs.fleet), never by hand:
    the fleet page, the API and capability routing read it. A worker not seen for
    ROCPATH_WORKER_GONE_S is gone; its running jobs are the reaper's, as before. The row
    stays (with its last inventory) so that the page can say what left, and when.
    """

    name = models.CharField(max_length=200, unique=True, help_text="Celery's node name")
    host = models.CharField(max_length=255, help_text="the host its GPUs are leased under")
    executor = models.CharField(max_length=32, help_text="local, docker or slurm")
    queues = models.JSONField(default=list, blank=True, help_text="the queues it consumes")
    # What it can give jobs: {"gpus": [{vendor, model, arch, memory_bytes, ...}],
    # "software": {...}, "images": [...], "cpus": N, "memory_mb": N, ...}: the probe's
    # inventory, an operator's configured one, or a Slurm partition's.
    inventory = models.JSONField(default=dict, blank=True)
    jobs_running = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField(default=timezone.now)
    last_seen_at = models.DateTimeField(default=timezone.now, db_index=True)
    stopped_at = models.DateTimeField(null=True, blank=True, help_text="set on a clean stop")

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.executor} on {self.host})"

    @property
    def is_live(self) -> bool:
        """Seen within ROCPATH_WORKER_GONE_S and not stopped since."""
        return self.stopped_at is None and self.last_seen_at >= live_since()


def live_since() -> timezone.datetime:
    """The oldest last-seen time of a worker still counted live."""
    return timezone.now() - timedelta(seconds=settings.ROCPATH_WORKER_GONE_S)
