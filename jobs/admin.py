from typing import Any

from django import forms
from django.contrib import admin

from jobs.fleet_view import WorkerState, state_of
from jobs.models import (
    Artifact,
    ControlBeat,
    Environment,
    GpuLease,
    Job,
    JobEvent,
    Measurement,
    Schedule,
    TunedFile,
    Worker,
)
from jobs.models.schedule import EDITABLE_FIELDS
from jobs.models.worker import live_since
from jobs.services.schedules import check_schedule, plan
from jobs.services.submit import SubmissionError


class ArtifactInline(admin.TabularInline):
    model = Artifact
    extra = 0
    readonly_fields = ["path", "size", "sha256", "content_type", "description", "created_at"]
    can_delete = False


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "kind",
        "team",
        "project",
        "status",
        "launch_type",
        "created_at",
        "worker",
    ]
    list_filter = ["status", "kind", "launch_type", "team"]
    search_fields = ["id", "kind", "task_id", "worker", "error"]
    list_select_related = ["team", "project"]
    # Status moves only through the state machine (jobs.services), never by editing a row.
    readonly_fields = [
        "status",
        "queued_at",
        "started_at",
        "finished_at",
        "heartbeat_at",
        "cancel_requested_at",
        "progress",
        "progress_message",
        "exit_code",
        "error",
        "attempt",
        "worker",
        "task_id",
        "environment",
        "summary",
        "rerun_of",
        "schedule",
        "created_at",
    ]
    raw_id_fields = ["created_by", "project"]
    inlines = [ArtifactInline]


@admin.register(JobEvent)
class JobEventAdmin(admin.ModelAdmin):
    list_display = ["id", "job", "kind", "level", "created_at", "message"]
    list_filter = ["kind", "level"]
    raw_id_fields = ["job"]


@admin.register(Artifact)
class ArtifactAdmin(admin.ModelAdmin):
    list_display = ["id", "job", "path", "size", "content_type"]
    raw_id_fields = ["job"]


@admin.register(Environment)
class EnvironmentAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "hostname",
        "gpu_vendor",
        "gpu_model",
        "gpu_count",
        "rocm_version",
        "cuda_version",
        "first_seen_at",
    ]
    search_fields = ["hostname", "gpu_model", "fingerprint", "data_sha256"]

    def has_change_permission(self, request: object, obj: object = None) -> bool:
        return False  # rows are immutable (jobs/models/environment.py)


@admin.register(Measurement)
class MeasurementAdmin(admin.ModelAdmin):
    list_display = ["id", "job", "benchmark", "metric", "value", "unit", "better"]
    list_filter = ["benchmark", "metric"]
    raw_id_fields = ["job", "environment"]


@admin.register(GpuLease)
class GpuLeaseAdmin(admin.ModelAdmin):
    """Which job holds which GPU of which host. Deleting a row frees that GPU: for an
    operator clearing a lease by hand (stale ones clear themselves, jobs.leases)."""

    list_display = ["host", "vendor", "index", "job", "acquired_at"]
    list_filter = ["host", "vendor"]
    readonly_fields = ["host", "vendor", "index", "job", "acquired_at"]

    def has_add_permission(self, request: object) -> bool:
        return False


class ScheduleAdminForm(forms.ModelForm):
    """The checks the page and the API make (jobs.services.schedules), as the schedule's
    owner: its jobs are submitted as that user, whoever edits the row here."""

    class Meta:
        model = Schedule
        fields = [*EDITABLE_FIELDS, "created_by"]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if self.errors:
            return data
        schedule = self.instance
        for field, value in data.items():
            setattr(schedule, field, value)
        if schedule.created_by is None:
            self.add_error("created_by", "Needed: the schedule's jobs are submitted as this user.")
            return data
        try:
            check_schedule(schedule, schedule.created_by)
        except SubmissionError as exc:
            for field, errors in exc.errors.items():
                for error in errors:
                    self.add_error(field if field in self.fields else None, error)
        return data


@admin.register(Schedule)
class ScheduleAdmin(admin.ModelAdmin):
    """Schedules; saving one here plans its next run from now, as the page does."""

    form = ScheduleAdminForm
    list_display = [
        "name",
        "team",
        "kind",
        "cron",
        "time_zone",
        "enabled",
        "next_run_at",
        "last_run_at",
        "consecutive_failures",
    ]
    list_filter = ["enabled", "kind", "team"]
    search_fields = ["name", "kind", "cron", "last_error"]
    list_select_related = ["team"]
    raw_id_fields = ["created_by", "project"]
    readonly_fields = [
        "next_run_at",
        "last_run_at",
        "last_job",
        "last_error",
        "consecutive_failures",
        "created_at",
    ]

    def save_model(self, request: Any, obj: Schedule, form: Any, change: bool) -> None:
        plan(obj)
        super().save_model(request, obj, form, change)


@admin.register(TunedFile)
class TunedFileAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "team",
        "method",
        "gpu_arch",
        "torch_version",
        "rocm_version",
        "created_at",
    ]
    list_filter = ["method", "gpu_arch", "team"]
    # A registered file is what a job tuned: never edited, only read (or deleted).
    readonly_fields = [
        "team", "project", "job", "method", "backend", "gpu_arch", "gpu_name", "torch_version",
        "rocm_version", "hipblaslt_version", "rocblas_version", "validators", "entries",
        "content", "sha256", "created_at",
    ]  # fmt: skip


class WorkerStateFilter(admin.SimpleListFilter):
    """live / gone / stopped, as the Workers page says it (jobs.fleet_view)."""

    title = "state"
    parameter_name = "state"

    def lookups(self, request: Any, model_admin: Any) -> list[tuple[str, str]]:
        return [(s, s) for s in WorkerState.ORDER]

    def queryset(self, request: Any, queryset: Any) -> Any:
        since = live_since()
        if self.value() == WorkerState.LIVE:
            return queryset.filter(stopped_at__isnull=True, last_seen_at__gte=since)
        if self.value() == WorkerState.GONE:
            return queryset.filter(stopped_at__isnull=True, last_seen_at__lt=since)
        if self.value() == WorkerState.STOPPED:
            return queryset.filter(stopped_at__isnull=False)
        return queryset


@admin.register(Worker)
class WorkerAdmin(admin.ModelAdmin):
    """Read-only: a row is the worker's own announcement (jobs.fleet); editing it would lie."""

    list_display = [
        "name", "host", "executor", "state", "jobs_running", "last_seen_at", "started_at",
        "stopped_at",
    ]  # fmt: skip
    list_filter = [WorkerStateFilter, "executor", "host"]
    search_fields = ["name", "host"]
    readonly_fields = [
        "name", "host", "executor", "queues", "inventory", "jobs_running", "started_at",
        "last_seen_at", "stopped_at",
    ]  # fmt: skip

    @admin.display(description="state")
    def state(self, worker: Worker) -> str:
        return state_of(worker)

    def has_add_permission(self, request: object) -> bool:
        return False

    def has_change_permission(self, request: object, obj: object = None) -> bool:
        return False


@admin.register(ControlBeat)
class ControlBeatAdmin(admin.ModelAdmin):
    """Read-only: a row is the control worker's own stamp (jobs.signals); /healthz reads it."""

    list_display = ["task", "at", "worker"]
    readonly_fields = ["task", "at", "worker"]

    def has_add_permission(self, request: object) -> bool:
        return False

    def has_change_permission(self, request: object, obj: object = None) -> bool:
        return False
