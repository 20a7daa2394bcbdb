"""Baselines and the verdicts measured against them.

The scope of a baseline is what makes a comparison like for like: one project, one
benchmark, one environment identity (``jobs.Environment.fingerprint``: the same
machine and stack). A job in that scope is compared with the baseline job when it is
ingested (results.receivers, fed by jobs' job-finished signal), one Verdict per case
and metric.
"""

from django.conf import settings
from django.db import models
from django.utils import timezone


class VerdictKind(models.TextChoices):
    IMPROVED = "improved", "Improved"
    REGRESSED = "regressed", "Regressed"
    UNCHANGED = "unchanged", "Unchanged"
    NOISY = "noisy", "Too noisy to conclude"
    # the case's run-to-run noise cannot rule out a change it would not flag either
    INCONCLUSIVE = "inconclusive", "Inconclusive"


class Baseline(models.Model):
    project = models.ForeignKey(
        "portal.AdoptionProject", on_delete=models.CASCADE, related_name="baselines"
    )
    benchmark = models.CharField(max_length=128)
    fingerprint = models.CharField(max_length=64, help_text="jobs.Environment.fingerprint")
    job = models.ForeignKey("jobs.Job", on_delete=models.CASCADE, related_name="baselines")
    note = models.CharField(max_length=500, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "benchmark", "fingerprint"], name="baseline_one_per_scope"
            )
        ]

    def __str__(self) -> str:
        return f"baseline of {self.benchmark} in project {self.project_id}: job {self.job_id}"


class Verdict(models.Model):
    """One case + metric of a job against its baseline, with the numbers that decided it."""

    job = models.ForeignKey("jobs.Job", on_delete=models.CASCADE, related_name="verdicts")
    baseline = models.ForeignKey(
        Baseline, on_delete=models.SET_NULL, null=True, blank=True, related_name="verdicts"
    )
    baseline_job = models.ForeignKey(
        "jobs.Job", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    benchmark = models.CharField(max_length=128)
    case = models.JSONField(default=dict, blank=True)
    # A hash of the canonical case JSON: what makes one verdict per job, case and metric
    # enforceable by the database (results.services.case_key).
    case_key = models.CharField(max_length=64, default="")
    metric = models.CharField(max_length=128)
    unit = models.CharField(max_length=32, blank=True)
    verdict = models.CharField(max_length=16, choices=VerdictKind.choices)
    baseline_value = models.FloatField(null=True, blank=True)
    value = models.FloatField(null=True, blank=True)
    ratio = models.FloatField(null=True, blank=True)
    ratio_low = models.FloatField(null=True, blank=True)
    ratio_high = models.FloatField(null=True, blank=True)
    p_value = models.FloatField(null=True, blank=True)
    detail = models.JSONField(default=dict, blank=True)
    acknowledged_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["job", "benchmark", "case_key", "metric"], name="verdict_one_per_case"
            )
        ]
        indexes = [
            models.Index(fields=["verdict", "acknowledged_at"], name="verdict_open"),
            models.Index(fields=["job"], name="verdict_job"),
        ]

    def __str__(self) -> str:
        return f"job {self.job_id} {self.benchmark}/{self.metric}: {self.verdict}"


# The alerting models live in their own module; importing them here registers them.
from results.alert_models import (  # noqa: E402
    Alert,
    AlertEvent,
    AlertSettings,
    Delivery,
    DeliveryAttempt,
    DeliveryChannel,
    DeliveryStatus,
)

__all__ = [
    "Alert",
    "AlertEvent",
    "AlertSettings",
    "Baseline",
    "Delivery",
    "DeliveryAttempt",
    "DeliveryChannel",
    "DeliveryStatus",
    "Verdict",
    "VerdictKind",
]


class MetricsScrape(models.Model):
    """When /metrics was last scraped successfully (one row): phase 4's gate asks whether
    monitoring sees the service, and a scrape is the only sign of it rocpath gets."""

    at = models.DateTimeField()
    client = models.CharField(max_length=64, blank=True)

    def __str__(self) -> str:
        return f"/metrics scraped at {self.at:%Y-%m-%d %H:%M}"
