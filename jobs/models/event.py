"""Ordered progress and log lines of a job. The row id is the read cursor."""

from django.db import models
from django.utils import timezone

from jobs.choices import EventKind


class JobEvent(models.Model):
    job = models.ForeignKey("jobs.Job", on_delete=models.CASCADE, related_name="events")
    created_at = models.DateTimeField(default=timezone.now)
    kind = models.CharField(max_length=16, choices=EventKind.choices)
    level = models.CharField(max_length=16, default="info")
    message = models.TextField(blank=True)
    pct = models.FloatField(null=True, blank=True)
    data = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["job", "id"], name="jobevent_job_id")]

    def __str__(self) -> str:
        return f"{self.kind}: {self.message[:60]}"
