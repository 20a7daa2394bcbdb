"""API shapes. Validation of what a job may be lives in jobs.services.submit_job."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from jobs.fleet_view import waiting_for
from jobs.models import Artifact, Environment, Job, JobEvent, Measurement, Schedule
from jobs.models.schedule import EDITABLE_FIELDS
from jobs.services.schedules import local_time
from teams.validators import no_control_characters


class EnvironmentSerializer(serializers.ModelSerializer):
    class Meta:
        model = Environment
        fields = [
            "id",
            "fingerprint",
            "hostname",
            "cpu_model",
            "gpu_vendor",
            "gpu_model",
            "gpu_arch",
            "gpu_count",
            "gpu_driver",
            "rocm_version",
            "cuda_version",
            "image",
            "image_digest",
            "data_sha256",
            "first_seen_at",
            "data",
        ]


class JobSerializer(serializers.ModelSerializer):
    team = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    duration_s = serializers.FloatField(read_only=True, allow_null=True)
    links = serializers.SerializerMethodField()

    class Meta:
        model = Job
        fields = [
            "id",
            "kind",
            "params",
            "team",
            "project",
            "source",
            "tuned_file",
            "created_by",
            "status",
            "launch_type",
            "progress",
            "progress_message",
            "requested_hardware",
            "executor",
            "image",
            "image_digest",
            "timeout_s",
            "created_at",
            "queued_at",
            "started_at",
            "finished_at",
            "cancel_requested_at",
            "duration_s",
            "exit_code",
            "error",
            "attempt",
            "worker",
            "task_id",
            "environment",
            "summary",
            "rerun_of",
            "links",
        ]
        read_only_fields = fields

    @extend_schema_field(serializers.DictField(child=serializers.CharField()))
    def get_links(self, job: Job) -> dict[str, str]:
        return {
            "self": reverse("api:job-detail", args=[job.pk]),
            "events": reverse("api:job-events", args=[job.pk]),
            "artifacts": reverse("api:job-artifacts", args=[job.pk]),
            "measurements": reverse("api:job-measurements", args=[job.pk]),
            "cancel": reverse("api:job-cancel", args=[job.pk]),
            "page": reverse("portal:job-detail", args=[job.pk]),
        }


class JobSubmitSerializer(serializers.Serializer):
    kind = serializers.CharField(max_length=64)
    params = serializers.DictField(required=False, default=dict)
    team = serializers.SlugField(required=False, help_text="team slug; optional with one team")
    project = serializers.IntegerField(required=False, allow_null=True)
    hardware = serializers.DictField(required=False, default=dict)
    timeout_s = serializers.IntegerField(required=False, min_value=1)
    image = serializers.CharField(
        required=False, max_length=300, help_text="container image (docker executor)"
    )
    source = serializers.IntegerField(
        required=False,
        help_text="source snapshot id (default: the project's current code, the newest ready "
        "source of its current lineage)",
    )
    tuned_file = serializers.IntegerField(
        required=False, help_text="a registered tuned GEMM file of the team to run with"
    )


class JobEventSerializer(serializers.ModelSerializer):
    class Meta:
        model = JobEvent
        fields = ["id", "created_at", "kind", "level", "message", "pct", "data"]


class EventPageSerializer(serializers.Serializer):
    events = JobEventSerializer(many=True)
    next_cursor = serializers.IntegerField()
    status = serializers.CharField()
    progress = serializers.FloatField()
    active = serializers.BooleanField()


class ArtifactSerializer(serializers.ModelSerializer):
    download = serializers.SerializerMethodField()

    class Meta:
        model = Artifact
        fields = ["id", "path", "size", "sha256", "content_type", "description", "download"]

    def get_download(self, artifact: Artifact) -> str:
        return reverse("api:artifact-download", args=[artifact.job_id, artifact.pk])


class MeasurementSerializer(serializers.ModelSerializer):
    class Meta:
        model = Measurement
        fields = [
            "id",
            "job",
            "environment",
            "benchmark",
            "case",
            "metric",
            "unit",
            "value",
            "samples",
            "better",
            "created_at",
        ]


class KindSerializer(serializers.Serializer):
    name = serializers.CharField()
    title = serializers.CharField()
    description = serializers.CharField()
    default_timeout_s = serializers.IntegerField()
    params_schema = serializers.DictField()


class TokenSerializer(serializers.Serializer):
    token = serializers.CharField()
    created = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()


class ScheduleSerializer(serializers.ModelSerializer):
    """A schedule as read; writes come through ScheduleWriteSerializer and save_schedule."""

    team = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    created_by = serializers.SlugRelatedField(
        slug_field="username",
        read_only=True,
        help_text="whose access its jobs are submitted with: who saved it last",
    )
    next_run_local = serializers.SerializerMethodField(
        help_text="next_run_at in the schedule's own time zone"
    )
    links = serializers.SerializerMethodField()

    class Meta:
        model = Schedule
        fields = [
            "id",
            *EDITABLE_FIELDS,
            "next_run_at",
            "next_run_local",
            "last_run_at",
            "last_job",
            "last_error",
            "consecutive_failures",
            "created_by",
            "created_at",
            "links",
        ]
        read_only_fields = fields

    @extend_schema_field(serializers.DateTimeField(allow_null=True))
    def get_next_run_local(self, schedule: Schedule) -> str | None:
        moment = local_time(schedule, schedule.next_run_at)
        return moment.isoformat() if moment else None

    @extend_schema_field(serializers.DictField(child=serializers.CharField()))
    def get_links(self, schedule: Schedule) -> dict[str, str]:
        return {
            "self": reverse("api:schedule-detail", args=[schedule.pk]),
            "jobs": reverse("api:schedule-jobs", args=[schedule.pk]),
            "page": reverse("portal:schedule-detail", args=[schedule.pk]),
        }


class ScheduleWriteSerializer(serializers.Serializer):
    """What a schedule is made of; what is valid is jobs.services.schedules' to say."""

    name = serializers.CharField(max_length=200, validators=[no_control_characters])
    team = serializers.SlugField(required=False, help_text="team slug; optional with one team")
    project = serializers.IntegerField(required=False, allow_null=True)
    kind = serializers.CharField(max_length=64)
    params = serializers.DictField(required=False, default=dict)
    hardware = serializers.DictField(required=False, default=dict)
    timeout_s = serializers.IntegerField(required=False, allow_null=True, min_value=1)
    cron = serializers.CharField(
        max_length=200, help_text="five fields: minute hour day-of-month month day-of-week"
    )
    time_zone = serializers.CharField(
        max_length=64, required=False, default="UTC", help_text="IANA name, e.g. Europe/Berlin"
    )
    enabled = serializers.BooleanField(required=False, default=True)


# --- The fleet (issue 16, pages): workers as jobs.fleet_view reads them -------------------


class WorkerJobSerializer(serializers.Serializer):
    """A job a worker runs now, of the reader's teams (another team's is left out)."""

    id = serializers.IntegerField()
    kind = serializers.CharField()
    status = serializers.CharField()
    link = serializers.SerializerMethodField()

    def get_link(self, job: Job) -> str:
        return reverse("api:job-detail", args=[job.pk])


class GpuGroupSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    vendor = serializers.CharField(allow_null=True)
    model = serializers.CharField(allow_null=True)
    arch = serializers.CharField(allow_null=True)
    memory_bytes = serializers.IntegerField(allow_null=True)


class WorkerSerializer(serializers.Serializer):
    """A fleet member (jobs.fleet_view.FleetMember): the row, its state, the visible jobs."""

    id = serializers.IntegerField(source="worker.pk")
    name = serializers.CharField(source="worker.name", help_text="Celery's node name")
    host = serializers.CharField(source="worker.host")
    executor = serializers.CharField(source="worker.executor")
    queues = serializers.ListField(child=serializers.CharField(), source="worker.queues")
    state = serializers.ChoiceField(
        choices=["live", "gone", "stopped"],
        help_text="live: seen within ROCPATH_WORKER_GONE_S; gone: not seen since; "
        "stopped: stopped cleanly",
    )
    gpus = GpuGroupSerializer(many=True, help_text="the inventory's GPUs, grouped by model")
    inventory = serializers.DictField(source="worker.inventory", help_text="as announced")
    jobs_running = serializers.IntegerField(
        source="worker.jobs_running", help_text="as announced: every team's jobs counted"
    )
    jobs = WorkerJobSerializer(many=True, help_text="those of them your teams may read")
    started_at = serializers.DateTimeField(source="worker.started_at")
    last_seen_at = serializers.DateTimeField(source="worker.last_seen_at")
    last_seen_s_ago = serializers.IntegerField(source="seen_s_ago")
    stopped_at = serializers.DateTimeField(source="worker.stopped_at", allow_null=True)
    links = serializers.SerializerMethodField()

    @extend_schema_field(serializers.DictField(child=serializers.CharField()))
    def get_links(self, member: Any) -> dict[str, str]:
        return {
            "self": reverse("api:worker-detail", args=[member.worker.pk]),
            "page": reverse("portal:worker-detail", args=[member.worker.pk]),
        }


class WaitingSerializer(serializers.Serializer):
    """jobs.fleet_view.Waiting.as_dict(): where a pending or queued job waits and why."""

    queue = serializers.CharField()
    default_queue = serializers.BooleanField()
    route_note = serializers.CharField(allow_blank=True)
    live_workers = serializers.ListField(child=serializers.CharField())
    busy_workers = serializers.ListField(child=serializers.CharField())
    note = serializers.CharField()


class JobDetailSerializer(JobSerializer):
    """One job as GET /api/v1/jobs/<id>/ answers: the list's fields and ``waiting``.

    ``waiting`` costs a query (the live workers), so only the detail carries it, not every
    row of a list.
    """

    waiting = serializers.SerializerMethodField(
        help_text="while pending or queued: the queue it waits on, why, and who consumes it "
        "now; null once it runs or ended"
    )

    class Meta(JobSerializer.Meta):
        fields = [*JobSerializer.Meta.fields, "waiting"]
        read_only_fields = fields

    @extend_schema_field(WaitingSerializer(allow_null=True))
    def get_waiting(self, job: Job) -> dict[str, Any] | None:
        waiting = waiting_for(job)
        return waiting.as_dict() if waiting else None
