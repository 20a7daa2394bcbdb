"""A schedule: a job to submit again and again, on a cron expression in a time zone.

A schedule is a row, not a beat entry: the beat task (jobs.services.schedules) claims a
due row with a conditional UPDATE on ``next_run_at``, so two beats never fire one
schedule twice, and it sets the next run from *now*, so a window missed while nothing
ran fires once, not once per missed window. The job goes through ``submit_job`` with
launch type "scheduled": the same validation, quotas and queueing as a manual launch.
"""

from django.conf import settings
from django.db import models
from django.utils import timezone

from teams.validators import no_control_characters

# What a person writes (page, API, admin); the rest is the beat's to keep.
EDITABLE_FIELDS = (
    "name",
    "team",
    "project",
    "kind",
    "params",
    "hardware",
    "timeout_s",
    "cron",
    "time_zone",
    "enabled",
)


class Schedule(models.Model):
    name = models.CharField(max_length=200, validators=[no_control_characters])
    team = models.ForeignKey("portal.Team", on_delete=models.CASCADE, related_name="schedules")
    project = models.ForeignKey(
        "portal.AdoptionProject",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="schedules",
    )
    kind = models.CharField(max_length=64)
    params = models.JSONField(default=dict, blank=True)
    hardware = models.JSONField(default=dict, blank=True)
    timeout_s = models.PositiveIntegerField(null=True, blank=True)
    cron = models.CharField(max_length=200, help_text="five fields: minute hour day month weekday")
    time_zone = models.CharField(max_length=64, default="UTC")
    enabled = models.BooleanField(default=True)
    next_run_at = models.DateTimeField(null=True, blank=True, db_index=True)
    last_run_at = models.DateTimeField(null=True, blank=True)
    last_job = models.ForeignKey(
        "jobs.Job", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    last_error = models.TextField(blank=True)
    # Submissions refused in a row (0 after one that made a job): the schedule keeps firing
    # whatever this says; alerts and the page read it (jobs.services.schedules).
    consecutive_failures = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="schedules",
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.cron} {self.time_zone})"
