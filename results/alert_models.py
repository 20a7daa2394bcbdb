"""Alerts: a project's settings, the events it was told of, and each delivery's tries.

Kept apart from the baselines' models (results.models imports them) so the alerting
code reads as one unit. An event is written once (``dedupe_key`` makes a repeated
check, such as the stalled-schedule sweep, tell of one stall once); each of its targets
(a webhook URL, the e-mail recipients) gets a Delivery, and every try of a delivery is
an Attempt row: the delivery log the project's alerts page shows.
"""

from __future__ import annotations

import secrets

from django.db import models
from django.utils import timezone


class AlertEvent(models.TextChoices):
    REGRESSION = "regression", "A regression against a baseline"
    SCHEDULED_JOB_FAILED = "scheduled_job_failed", "A scheduled job failed or errored"
    SCHEDULE_STALLED = "schedule_stalled", "A schedule stopped running"
    # Sent from the alerts page whatever the events chosen, to check a receiver.
    TEST = "test", "A test alert"


# The events a project chooses among (a test alert is sent only when asked for).
CHOSEN_EVENTS = [event for event in AlertEvent if event != AlertEvent.TEST]


def new_secret() -> str:
    return secrets.token_urlsafe(32)


class AlertSettings(models.Model):
    """Where a project's alerts go, and which events it wants to hear of."""

    project = models.OneToOneField(
        "portal.AdoptionProject", on_delete=models.CASCADE, related_name="alert_settings"
    )
    webhook_urls = models.JSONField(default=list, blank=True, help_text="http(s) URLs")
    # The key of the HMAC-SHA256 signature on every webhook body (docs/alerts.md).
    secret = models.CharField(max_length=128, default=new_secret)
    emails = models.JSONField(default=list, blank=True, help_text="recipient addresses")
    events = models.JSONField(
        default=list, blank=True, help_text="the AlertEvent values to send; empty: none"
    )
    updated_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"alert settings of project {self.project_id}"

    @property
    def email_target(self) -> str:
        """What one e-mail delivery is addressed to: every recipient, one message."""
        return ",".join(self.emails)

    def targets(self) -> list[str]:
        """The delivery targets configured now: each webhook URL, and the e-mail, if any."""
        return [*self.webhook_urls, *([self.email_target] if self.emails else [])]

    def wants(self, event: str) -> bool:
        return event in self.events


class Alert(models.Model):
    """One thing that happened and was told to a project's targets."""

    project = models.ForeignKey(
        "portal.AdoptionProject", on_delete=models.CASCADE, related_name="alerts"
    )
    event = models.CharField(max_length=32, choices=AlertEvent.choices)
    payload = models.JSONField(default=dict, blank=True)
    # Set by checks that may see the same thing again (a stall seen by every sweep).
    dedupe_key = models.CharField(max_length=200, null=True, blank=True, unique=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["project", "-created_at"], name="alert_project_created")]

    def __str__(self) -> str:
        return f"{self.event} in project {self.project_id}"


class DeliveryChannel(models.TextChoices):
    WEBHOOK = "webhook", "Webhook"
    EMAIL = "email", "E-mail"


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    RETRYING = "retrying", "Retrying"
    DELIVERED = "delivered", "Delivered"
    FAILED = "failed", "Failed"


class Delivery(models.Model):
    """One alert to one target: a webhook URL, or the project's e-mail recipients."""

    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="deliveries")
    channel = models.CharField(max_length=16, choices=DeliveryChannel.choices)
    target = models.TextField(help_text="the URL, or the recipients separated by commas")
    # The exact bytes signed and sent (webhooks), so every try sends the same body.
    body = models.TextField(blank=True)
    status = models.CharField(
        max_length=16, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING
    )
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.channel} delivery {self.pk} ({self.status})"


# What a try's row says until the try records its answer: for ever, if its process died.
UNFINISHED = (
    "no answer recorded: the try is under way, or its process was killed before it finished"
)


class DeliveryAttempt(models.Model):
    """One try of a delivery: what the receiver answered, or why there was no answer."""

    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="tries")
    number = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField()
    status_code = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    response_excerpt = models.TextField(blank=True)
    will_retry = models.BooleanField(default=False)
    retry_in_s = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["delivery_id", "number"]
        constraints = [models.UniqueConstraint(fields=["delivery", "number"], name="attempt_once")]

    def __str__(self) -> str:
        return f"try {self.number} of delivery {self.delivery_id}: {self.status_code or self.error}"

    @property
    def unfinished(self) -> bool:
        """No answer recorded (yet): not an error of the receiver's, and no duration."""
        return self.error == UNFINISHED

    @property
    def duration_ms(self) -> int:
        return round((self.finished_at - self.started_at).total_seconds() * 1000)
