"""The Job row and its state machine.

Status only changes through the methods below. Each move is a conditional
UPDATE (``WHERE status = <the status we saw>``): if another process moved the
job first, zero rows change and the method returns False instead of
overwriting that move. A move the table does not allow raises.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import models, transaction
from django.utils import timezone

from jobs.choices import (
    ACTIVE_STATUSES,
    TERMINAL_STATUSES,
    TRANSITIONS,
    EventKind,
    JobStatus,
    LaunchType,
)


class IllegalTransition(Exception):
    """A move the state machine forbids (e.g. succeeded → running)."""


class Job(models.Model):
    kind = models.CharField(max_length=64)
    params = models.JSONField(default=dict, blank=True)
    # "portal" is the teams app's label (teams/apps.py says why).
    team = models.ForeignKey("portal.Team", on_delete=models.CASCADE, related_name="jobs")
    project = models.ForeignKey(
        "portal.AdoptionProject",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="jobs",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="jobs",
    )
    source = models.ForeignKey(
        "portal.SourceSnapshot",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="jobs",
        help_text="the code snapshot the job reads (kinds that take a source)",
    )
    requested_hardware = models.JSONField(default=dict, blank=True)
    executor = models.CharField(max_length=32, default="local")
    image = models.CharField(max_length=300, blank=True)
    image_digest = models.CharField(max_length=100, blank=True)
    status = models.CharField(
        max_length=16, choices=JobStatus.choices, default=JobStatus.PENDING, db_index=True
    )
    launch_type = models.CharField(
        max_length=16, choices=LaunchType.choices, default=LaunchType.MANUAL
    )
    rerun_of = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="reruns"
    )
    schedule = models.ForeignKey(
        "jobs.Schedule", on_delete=models.SET_NULL, null=True, blank=True, related_name="jobs"
    )
    timeout_s = models.PositiveIntegerField()

    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    queued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    cancel_requested_at = models.DateTimeField(null=True, blank=True)

    progress = models.FloatField(default=0.0)
    progress_message = models.CharField(max_length=500, blank=True)
    exit_code = models.IntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    attempt = models.PositiveIntegerField(default=0)
    worker = models.CharField(max_length=200, blank=True)
    task_id = models.CharField(max_length=64, blank=True, db_index=True)
    # Where the job was routed (jobs.routing): the Celery queue it waits on, and why that
    # one (which capable workers consume it), as the job page shows it.
    queue = models.CharField(max_length=64, blank=True)
    route_note = models.CharField(max_length=500, blank=True)

    environment = models.ForeignKey(
        "jobs.Environment", on_delete=models.SET_NULL, null=True, blank=True, related_name="jobs"
    )
    summary = models.JSONField(default=dict, blank=True)
    tuned_file = models.ForeignKey(
        "jobs.TunedFile",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="used_by",
        help_text="a registered tuned GEMM file the job runs with (its env vars set)",
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["team", "-created_at"], name="job_team_created"),
            # What a worker runs: make run's Ctrl-C count and the reaper ask it by worker.
            models.Index(fields=["worker", "status"], name="job_worker_status"),
        ]

    def __str__(self) -> str:
        return f"job {self.pk} {self.kind} ({self.status})"

    # --- reading -----------------------------------------------------------
    @property
    def is_active(self) -> bool:
        return self.status in ACTIVE_STATUSES

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    @property
    def duration_s(self) -> float | None:
        if not self.started_at:
            return None
        end = self.finished_at or timezone.now()
        return (end - self.started_at).total_seconds()

    # --- moving ------------------------------------------------------------
    def _move(
        self, to: str, *, note: str = "", where: dict[str, Any] | None = None, **fields: Any
    ) -> bool:
        if to not in TRANSITIONS[self.status]:
            raise IllegalTransition(f"job {self.pk}: {self.status} → {to} is not allowed")
        from jobs.models.event import JobEvent

        # One commit for the move and its log line; no savepoint inside a caller's transaction.
        with transaction.atomic(savepoint=False):
            changed = Job.objects.filter(pk=self.pk, status=self.status, **(where or {})).update(
                status=to, **fields
            )
            if not changed:
                return False
            JobEvent.objects.create(
                job_id=self.pk,
                kind=EventKind.STATUS,
                level="info",
                message=f"{to}" + (f": {note}" if note else ""),
                data={"status": to},
            )
            if to in TERMINAL_STATUSES:
                from jobs.finished import announce_finished

                announce_finished(self.pk, to)
        # The guard on status makes this process the only writer of the move, so the
        # values it wrote are the row's values: no need to read them back.
        self.status = to
        for name, value in fields.items():
            setattr(self, name, value)
        return True

    def mark_queued(self, task_id: str, note: str = "") -> bool:
        return self._move(JobStatus.QUEUED, note=note, task_id=task_id, queued_at=timezone.now())

    def mark_pending(self, note: str) -> bool:
        """Back to pending: the message that was to run it could not be sent."""
        return self._move(JobStatus.PENDING, note=note, task_id="", queued_at=None)

    def claim(self, worker: str, *, task_id: str = "", **fields: Any) -> bool:
        """Take a queued job for running; False when another delivery already took it.

        ``task_id``: the message's; when given, only the message the row names may claim
        it. The dispatcher sends a job again under a new id when it believes the first
        message lost; if that one turns up after all (a worker that answered late), it
        must not claim the job under an id the row no longer has, or a retry of it would
        take it for another's run and leave the job running with nobody on it.
        ``fields`` are written in the same UPDATE (the executor that will run it).
        """
        now = timezone.now()
        return self._move(
            JobStatus.RUNNING,
            where={"task_id": task_id} if task_id else None,
            note=f"on {worker}",
            worker=worker,
            started_at=now,
            heartbeat_at=now,
            # Safe without F(): a concurrent claim would have moved the status first.
            attempt=self.attempt + 1,
            **fields,
        )

    def finish(
        self,
        status: str,
        *,
        exit_code: int | None = None,
        error: str = "",
        summary: dict | None = None,
        environment_id: int | None = None,
        progress: float | None = None,
    ) -> bool:
        if status not in TERMINAL_STATUSES:
            raise IllegalTransition(f"finish() needs a terminal status, not {status!r}")
        fields: dict[str, Any] = {"finished_at": timezone.now(), "exit_code": exit_code}
        if error:
            fields["error"] = error[:20000]
        if summary is not None:
            fields["summary"] = summary
        if environment_id is not None:
            fields["environment_id"] = environment_id
        if status == JobStatus.SUCCEEDED:
            fields["progress"] = 100.0
        elif progress is not None:
            fields["progress"] = progress
        return self._move(status, note=error.splitlines()[0][:300] if error else "", **fields)

    def cancel(self, reason: str) -> bool:
        return self._move(JobStatus.CANCELED, note=reason, error=reason, finished_at=timezone.now())

    def fail_to_run(self, reason: str) -> bool:
        """End the job as errored: we could not run it (the tool never said yes or no)."""
        return self._move(
            JobStatus.ERRORED, note=reason, error=reason[:20000], finished_at=timezone.now()
        )

    def request_cancel(self) -> bool:
        """Ask the worker running this job to kill it; the worker then moves it to canceled."""
        if self.status != JobStatus.RUNNING:
            raise IllegalTransition(f"job {self.pk} is {self.status}, not running")
        now = timezone.now()
        changed = Job.objects.filter(
            pk=self.pk, status=JobStatus.RUNNING, cancel_requested_at__isnull=True
        ).update(cancel_requested_at=now)
        if changed:
            self.cancel_requested_at = now
        return bool(changed)

    def beat(self, when: datetime | None = None) -> None:
        Job.objects.filter(pk=self.pk, status=JobStatus.RUNNING).update(
            heartbeat_at=when or timezone.now()
        )
