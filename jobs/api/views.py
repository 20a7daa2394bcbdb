"""REST endpoints: validate, check the team, call one service, answer.

Everything is scoped to the caller's teams through teams.access; another
team's objects answer 404.
"""

from __future__ import annotations

from django.http import FileResponse, Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    extend_schema,
    extend_schema_view,
)
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from jobs import services
from jobs.access import artifacts_for, jobs_for
from jobs.api import examples as ex
from jobs.api.authentication import rotate_token, token_expires_at
from jobs.api.serializers import (
    ArtifactSerializer,
    EnvironmentSerializer,
    EventPageSerializer,
    JobDetailSerializer,
    JobEventSerializer,
    JobSerializer,
    JobSubmitSerializer,
    KindSerializer,
    MeasurementSerializer,
    ScheduleSerializer,
    ScheduleWriteSerializer,
    TokenSerializer,
    WorkerSerializer,
)
from jobs.choices import JobStatus, LaunchType
from jobs.fleet_view import WorkerState, fleet, member, with_visible_jobs
from jobs.models import (
    Artifact,
    Environment,
    IllegalTransition,
    Job,
    Schedule,
    TunedFile,
    Worker,
)
from jobs.models.schedule import EDITABLE_FIELDS
from stack.kinds import KINDS
from stack.kinds.probe import KIND as PROBE
from teams.access import can_write, projects_for, team_ids, teams_for
from teams.models import SourceSnapshot


@extend_schema_view(
    retrieve=extend_schema(
        summary="Read one job",
        description=(
            "One job of your teams: its status, progress, parameters (defaults filled), "
            "summary and links to its events, artifacts and measurements. Another team's "
            "job answers 404."
        ),
        examples=[ex.FINISHED_JOB_DETAIL, ex.QUEUED_JOB],
    )
)
class JobViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    viewsets.GenericViewSet,
):
    serializer_class = JobSerializer

    def get_serializer_class(self):
        # The detail says where a waiting job waits (jobs.fleet_view); a list row does not.
        return JobDetailSerializer if self.action == "retrieve" else JobSerializer

    def get_queryset(self):
        queryset = jobs_for(self.request.user)
        if self.action != "list":
            return queryset
        params = self.request.query_params
        if value := params.get("status"):
            wanted = value.split(",")
            unknown = [s for s in wanted if s not in JobStatus.values]
            if unknown:
                raise ValidationError({"status": [f"unknown status {', '.join(unknown)}"]})
            queryset = queryset.filter(status__in=wanted)
        if value := params.get("kind"):
            queryset = queryset.filter(kind=value)
        if value := params.get("project"):
            if not value.isdigit():
                raise ValidationError({"project": ["must be a project id"]})
            queryset = queryset.filter(project_id=int(value))
        if value := params.get("team"):
            queryset = queryset.filter(team__slug=value)
        return queryset

    @extend_schema(
        summary="List jobs",
        description=(
            "Your teams' jobs, newest first, a page at a time; filter by status (several, "
            "comma-separated), kind, project id or team slug. An unknown status is a 400 "
            "naming the field."
        ),
        examples=[ex.JOBS_EXAMPLE],
        parameters=[
            OpenApiParameter("status", str, description="comma-separated statuses"),
            OpenApiParameter("kind", str),
            OpenApiParameter("project", int),
            OpenApiParameter("team", str, description="team slug"),
        ],
    )
    def list(self, request: Request, *args: object, **kwargs: object) -> Response:
        return super().list(request, *args, **kwargs)

    @extend_schema(
        summary="Submit a job",
        description=(
            "Validates the kind's params against its JSON Schema (GET /api/v1/kinds/; every "
            "field has a default, so {} asks for the defaults), checks the team's quota and "
            "queues the job. 201 with Location once handed to the broker; 202 when the "
            "broker is down and the job waits to be queued. Errors are 400s naming the field."
        ),
        request=JobSubmitSerializer,
        responses={201: JobSerializer, 202: JobSerializer},
        examples=[ex.SUBMIT, ex.SUBMIT_SWEEP, ex.SUBMITTED, ex.WAITING],
    )
    def create(self, request: Request, *args: object, **kwargs: object) -> Response:
        form = JobSubmitSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        team = project = None
        errors: dict[str, list[str]] = {}
        if slug := data.get("team"):
            team = teams_for(request.user).filter(slug=slug).first()
            if team is None:
                errors["team"] = [f"No team {slug!r} among yours."]
        if data.get("project") is not None:
            project = projects_for(request.user).filter(pk=data["project"]).first()
            if project is None:
                errors["project"] = [f"No project {data['project']} among your teams'."]
        source = None
        if data.get("source") is not None:
            source = SourceSnapshot.objects.filter(
                pk=data["source"], project__in=projects_for(request.user)
            ).first()
            if source is None:
                errors["source"] = [f"No source {data['source']} among your projects'."]
        tuned_file = None
        if data.get("tuned_file") is not None:
            tuned_file = TunedFile.objects.filter(
                pk=data["tuned_file"], team__in=teams_for(request.user)
            ).first()
            if tuned_file is None:
                errors["tuned_file"] = [f"No tuned file {data['tuned_file']} among your teams'."]
        if errors:
            raise ValidationError(errors)
        try:
            job = services.submit_job(
                user=request.user,
                kind=data["kind"],
                params=data.get("params") or {},
                team=team,
                project=project,
                hardware=data.get("hardware") or {},
                timeout_s=data.get("timeout_s"),
                launch_type=LaunchType.API,
                image=data.get("image", ""),
                source=source,
                tuned_file=tuned_file,
            )
        except services.SubmissionError as exc:
            raise ValidationError(exc.errors) from exc
        body = JobSerializer(job, context={"request": request}).data
        if services.waits_for_broker(job):
            # The broker could not be reached: the job is kept and queued once it is back
            # (services.dispatch). 202, not 201: accepted, not yet handed to a worker.
            body = {**body, "detail": services.BROKER_DOWN_NOTE}
            return Response(
                body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["links"]["self"]}
            )
        return Response(
            body, status=status.HTTP_201_CREATED, headers={"Location": body["links"]["self"]}
        )

    @extend_schema(
        summary="Cancel a job",
        description=(
            "Asks a pending, queued or running job to stop (members only; viewers get 403). "
            "202 with the job as it is now; 409 when it has already ended."
        ),
        request=None,
        responses={202: JobSerializer, 409: None},
        examples=[ex.RUNNING],
    )
    @action(detail=True, methods=["post"])
    def cancel(
        self, request: Request, pk: str | None = None, format: str | None = None
    ) -> Response:
        job = self.get_object()
        if not can_write(request.user, job.team_id):
            return Response({"detail": "Viewers cannot cancel jobs."}, status=403)
        try:
            services.cancel_job(job, by=request.user.get_username())
        except IllegalTransition as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        job.refresh_from_db()
        return Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        summary="Follow a job's log",
        description=(
            "The job's log, progress and status events after the cursor ``after`` (0: from "
            "the start), at most ``limit``; poll with the returned next_cursor while "
            "``active`` is true."
        ),
        examples=[ex.EVENTS],
        parameters=[
            OpenApiParameter("after", int, description="last event id seen (0 = from start)"),
            OpenApiParameter("limit", int, description="at most this many (≤ 1000)"),
        ],
        responses=EventPageSerializer,
    )
    @action(detail=True, methods=["get"])
    def events(
        self, request: Request, pk: str | None = None, format: str | None = None
    ) -> Response:
        job = self.get_object()
        after = _int_param(request, "after", 0)
        limit = min(max(_int_param(request, "limit", 500), 1), 1000)
        events = services.events_after(job, after, limit)
        return Response(
            {
                "events": JobEventSerializer(events, many=True).data,
                "next_cursor": events[-1].id if events else after,
                "status": job.status,
                "progress": job.progress,
                "active": job.is_active,
            }
        )

    @extend_schema(
        summary="List a job's artifacts",
        description=(
            "The files the job left (raw tool outputs, traces, CSVs), with size, SHA-256 "
            "and the download link, a page at a time."
        ),
        responses=ArtifactSerializer(many=True),
        examples=[ex.ARTIFACTS],
    )
    @action(detail=True, methods=["get"])
    def artifacts(
        self, request: Request, pk: str | None = None, format: str | None = None
    ) -> Response:
        job = self.get_object()
        page = self.paginate_queryset(job.artifacts.all())
        return self.get_paginated_response(ArtifactSerializer(page, many=True).data)

    @extend_schema(
        summary="List a job's measurements",
        description=(
            "Every number the job measured: benchmark, case parameters, metric, unit, the "
            "value (median) and its raw samples, and which direction is better; a page at "
            "a time."
        ),
        responses=MeasurementSerializer(many=True),
        examples=[ex.MEASUREMENTS],
    )
    @action(detail=True, methods=["get"])
    def measurements(
        self, request: Request, pk: str | None = None, format: str | None = None
    ) -> Response:
        job = self.get_object()
        page = self.paginate_queryset(job.measurements.all())
        return self.get_paginated_response(MeasurementSerializer(page, many=True).data)

    @extend_schema(
        summary="Run a job again",
        description=(
            "A new job of the same kind, params, team and project, linked by rerun_of; "
            "submitted through the same checks (quota, validation) as a new one."
        ),
        request=None,
        responses={201: JobSerializer},
        examples=[ex.RERUN],
    )
    @action(detail=True, methods=["post"])
    def rerun(self, request: Request, pk: str | None = None, format: str | None = None) -> Response:
        original = self.get_object()
        try:
            job = services.rerun_job(original, user=request.user)
        except services.SubmissionError as exc:
            raise ValidationError(exc.errors) from exc
        body = JobSerializer(job).data
        return Response(body, status=201, headers={"Location": body["links"]["self"]})


def _int_param(request: Request, name: str, default: int) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValidationError({name: ["must be an integer"]}) from None


class ArtifactDownloadView(APIView):
    """Streams an artifact's file; the same team check as everything else."""

    @extend_schema(
        summary="Download an artifact",
        description=(
            "The artifact's file as an attachment: text as text/plain, anything else as "
            "application/octet-stream, never a type a browser would run. 404 for another "
            "team's job or a file that is gone."
        ),
        responses={(200, "application/octet-stream"): bytes},
        examples=[ex.ARTIFACT_FILE],
    )
    def get(self, request: Request, job_pk: int, pk: int) -> FileResponse:
        artifact = get_object_or_404(artifacts_for(request.user), pk=pk, job_id=job_pk)
        return artifact_response(artifact)


# Declared types served as text (a download either way); every other is opaque bytes.
_TEXT_TYPES = ("application/json", "application/xml", "application/x-ndjson")


def served_content_type(declared: str) -> str:
    """The type an artifact is served with: never one a browser runs or renders as a page.

    A runner declares each artifact's type itself, and a file served from our origin as
    text/html or application/javascript would run as our pages' script could (a .js
    artifact guessed as a script, then loaded by another artifact). Text of any kind is
    text/plain; the rest application/octet-stream. The declared type stays in the listing.
    """
    base = declared.split(";", 1)[0].strip().lower()
    if base.startswith("text/") or base in _TEXT_TYPES or base.endswith(("+json", "+xml")):
        return "text/plain; charset=utf-8"
    return "application/octet-stream"


def artifact_response(artifact: Artifact) -> FileResponse:
    """An artifact's file as an attachment (the API's download and the portal's)."""
    try:
        path = services.artifact_file(artifact)
        handle = path.open("rb")
    except OSError:
        raise Http404("artifact file is gone") from None
    response = FileResponse(
        handle,
        as_attachment=True,
        filename=artifact.name,
        content_type=served_content_type(artifact.content_type),
    )
    # Opened anyway (a browser told to show it, a link followed): no script, no plugin, its
    # own opaque origin, and no sniffing the type back into HTML.
    response["Content-Security-Policy"] = "sandbox"
    response["X-Content-Type-Options"] = "nosniff"
    return response


@extend_schema_view(
    list=extend_schema(
        summary="List environments",
        description=(
            "The hardware and software environments your teams' jobs ran in (host, GPUs, "
            "driver, ROCm / CUDA, image digest), each recorded once per fingerprint."
        ),
        examples=[ex.ENVIRONMENTS],
    ),
    retrieve=extend_schema(
        summary="Read one environment",
        description="One environment, with the full probe data it was fingerprinted from.",
        examples=[ex.ENVIRONMENT_EXAMPLE],
    ),
)
class EnvironmentViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = EnvironmentSerializer

    def get_queryset(self):
        visible = Job.objects.filter(team_id__in=team_ids(self.request.user)).values(
            "environment_id"
        )
        return Environment.objects.filter(pk__in=visible)


class KindListView(APIView):
    """The job kinds this server can run, with the JSON Schema of their params."""

    @extend_schema(
        summary="List job kinds",
        description=(
            "The kinds this server runs, each with the JSON Schema of its params (every "
            "field defaulted) and its default timeout."
        ),
        responses=KindSerializer(many=True),
        examples=[ex.KINDS_EXAMPLE],
    )
    def get(self, request: Request) -> Response:
        return Response(
            [
                {
                    "name": k.name,
                    "title": k.title,
                    "description": k.description,
                    "default_timeout_s": k.default_timeout_s,
                    "params_schema": k.params_schema,
                }
                for k in sorted(KINDS.values(), key=lambda k: k.name)
            ]
        )


class TokenRotateView(APIView):
    """A new API token for the caller; the one it was called with stops working at once."""

    @extend_schema(
        summary="Rotate your API token",
        description=(
            "A new token for the caller, valid for ROCPATH_TOKEN_TTL_DAYS; the token this "
            "request was made with stops working at once."
        ),
        request=None,
        responses={201: TokenSerializer},
        examples=[ex.TOKEN],
    )
    def post(self, request: Request) -> Response:
        token = rotate_token(request.user)
        return Response(
            {"token": token.key, "created": token.created, "expires_at": token_expires_at(token)},
            status=status.HTTP_201_CREATED,
        )


PROBE_KIND = PROBE.name
_SCHEDULE_EXAMPLE = {
    "name": "nightly probe",
    "team": "gpu-platform",
    "kind": PROBE_KIND,
    "params": {},
    "cron": "0 3 * * *",
    "time_zone": "Europe/Berlin",
    "enabled": True,
}


_SCHEDULE_ANSWER = {
    "id": 7,
    **_SCHEDULE_EXAMPLE,
    "next_run_at": "2026-12-02T02:00:00Z",
    "next_run_local": "2026-12-02T03:00:00+01:00",
    "last_run_at": "2026-12-01T02:00:00Z",
    "last_job": 42,
    "last_error": "",
    "consecutive_failures": 0,
    "created_by": "alice",
    "created_at": "2026-11-30T16:00:00Z",
    "links": {"self": "/api/v1/schedules/7/", "jobs": "/api/v1/schedules/7/jobs/"},
}


@extend_schema_view(
    list=extend_schema(
        summary="List schedules",
        description="The schedules of your teams, by name: each with its next run (UTC and "
        "in its own time zone), its last run, job and error.",
        parameters=[OpenApiParameter("team", str, description="team slug")],
        examples=[ex.example("a nightly benchmark", _SCHEDULE_ANSWER)],
    ),
    retrieve=extend_schema(
        summary="Read a schedule",
        description="One schedule of your teams; another team's answers 404.",
        examples=[ex.example("a nightly benchmark", _SCHEDULE_ANSWER)],
    ),
    create=extend_schema(
        summary="Create a schedule",
        description="A job to submit on a cron expression (five fields) in an IANA time zone. "
        "The expression, the zone and the job (kind, params, hardware, timeout, team access) "
        "are checked now, as a submission would be, and a 400 names each bad field. Its jobs "
        "are submitted with launch type `scheduled`, as whoever saved the schedule last. A "
        "run missed while nothing fired schedules is fired once, not once per window "
        "(docs/schedules.md).",
        request=ScheduleWriteSerializer,
        responses={201: ScheduleSerializer},
        examples=[
            OpenApiExample("Every day at 03:00 Berlin time", value=_SCHEDULE_EXAMPLE),
            OpenApiExample(
                "A bad expression",
                value={"cron": ["Bad hour field in '0 25 * * *'."]},
                response_only=True,
                status_codes=["400"],
            ),
        ],
    ),
    update=extend_schema(
        summary="Replace a schedule",
        description="Every field again; the next run is planned afresh from now.",
        request=ScheduleWriteSerializer,
        responses={200: ScheduleSerializer},
        examples=[
            OpenApiExample(
                "Weekdays at 06:30", value={**_SCHEDULE_EXAMPLE, "cron": "30 6 * * MON-FRI"}
            )
        ],
    ),
    partial_update=extend_schema(
        summary="Change a schedule",
        description='Only the fields sent, e.g. `{"enabled": false}` to stop it firing; '
        "enabling plans the next run from now (runs missed while disabled are not fired).",
        request=ScheduleWriteSerializer,
        responses={200: ScheduleSerializer},
        examples=[OpenApiExample("Disable", value={"enabled": False})],
    ),
    destroy=extend_schema(
        summary="Delete a schedule",
        description="It fires no more; the jobs it made are kept (their `schedule` is cleared).",
        responses={204: None, 403: dict},
        examples=[
            ex.example(
                "a viewer", {"detail": "Viewers cannot delete schedules."}, status_codes=["403"]
            )
        ],
    ),
)
class ScheduleViewSet(viewsets.ModelViewSet):
    serializer_class = ScheduleSerializer

    def get_queryset(self):
        queryset = Schedule.objects.filter(team_id__in=team_ids(self.request.user)).select_related(
            "team", "created_by"
        )
        if self.action == "list" and (slug := self.request.query_params.get("team")):
            queryset = queryset.filter(team__slug=slug)
        return queryset

    def create(self, request: Request, *args: object, **kwargs: object) -> Response:
        schedule = self._save(request, Schedule(), partial=False)
        body = ScheduleSerializer(schedule).data
        return Response(
            body, status=status.HTTP_201_CREATED, headers={"Location": body["links"]["self"]}
        )

    def update(self, request: Request, *args: object, **kwargs: object) -> Response:
        schedule = self.get_object()
        if not can_write(request.user, schedule.team_id):
            return Response({"detail": "Viewers cannot change schedules."}, status=403)
        schedule = self._save(request, schedule, partial=kwargs.get("partial", False))
        return Response(ScheduleSerializer(schedule).data)

    def destroy(self, request: Request, *args: object, **kwargs: object) -> Response:
        schedule = self.get_object()
        if not can_write(request.user, schedule.team_id):
            return Response({"detail": "Viewers cannot delete schedules."}, status=403)
        schedule.delete()
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        summary="A schedule's jobs",
        description="The jobs the schedule made, newest first (paged).",
        responses=JobSerializer(many=True),
        examples=[ex.JOBS_EXAMPLE],
    )
    @action(detail=True, methods=["get"])
    def jobs(self, request: Request, pk: str | None = None, format: str | None = None) -> Response:
        schedule = self.get_object()
        page = self.paginate_queryset(jobs_for(request.user).filter(schedule=schedule))
        return self.get_paginated_response(JobSerializer(page, many=True).data)

    def _save(self, request: Request, schedule: Schedule, *, partial: bool) -> Schedule:
        form = ScheduleWriteSerializer(data=request.data, partial=partial)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        errors: dict[str, list[str]] = {}
        if "team" in data:
            team = teams_for(request.user).filter(slug=data["team"]).first()
            if team is None:
                errors["team"] = [f"No team {data['team']!r} among yours."]
            else:
                schedule.team = team
        if data.get("project") is not None:
            schedule.project = projects_for(request.user).filter(pk=data["project"]).first()
            if schedule.project is None:
                errors["project"] = [f"No project {data['project']} among your teams'."]
        elif "project" in data:
            schedule.project = None
        if errors:
            raise ValidationError(errors)
        for field in EDITABLE_FIELDS:
            if field in data and field not in ("team", "project"):  # looked up above
                setattr(schedule, field, data[field])
        try:
            return services.save_schedule(schedule, user=request.user)
        except services.SubmissionError as exc:
            raise ValidationError(exc.errors) from exc


@extend_schema_view(
    list=extend_schema(
        summary="List workers",
        description=(
            "The fleet: every worker that announced itself, live first, then gone (not seen "
            "for ROCPATH_WORKER_GONE_S), then stopped; each with its queues, full inventory, "
            "GPUs grouped by model, and the running jobs of your teams (another team's are "
            "counted in jobs_running, never listed). Any signed-in user may read it. Filter "
            "by state, GPU vendor or queue consumed."
        ),
        parameters=[
            OpenApiParameter("state", str, enum=list(WorkerState.ORDER)),
            OpenApiParameter("vendor", str, description="a GPU vendor: amd or nvidia"),
            OpenApiParameter("queue", str, description="workers consuming this queue"),
        ],
        examples=[ex.WORKERS_EXAMPLE],
    ),
    retrieve=extend_schema(
        summary="Read one worker",
        description=(
            "One worker, by id or by its Celery node name (celery@host): its state, last "
            "announcement and the running jobs of your teams."
        ),
        parameters=[OpenApiParameter("id", str, OpenApiParameter.PATH, description="id or name")],
        examples=[ex.WORKER_EXAMPLE],
    ),
)
class WorkerViewSet(viewsets.GenericViewSet):
    """The fleet, read-only: workers write their own rows (jobs.fleet); nobody else does."""

    serializer_class = WorkerSerializer
    queryset = Worker.objects.all()
    lookup_value_regex = "[^/]+"  # a Celery node name: celery@gpu-node-7

    def list(self, request: Request) -> Response:
        params = request.query_params
        state = params.get("state") or None
        if state and state not in WorkerState.ORDER:
            raise ValidationError(
                {"state": [f"unknown state {state[:32]!r}; one of {', '.join(WorkerState.ORDER)}"]}
            )
        members = fleet(
            state=state, vendor=params.get("vendor") or None, queue=params.get("queue") or None
        )
        page = self.paginate_queryset(members)
        with_visible_jobs(page, request.user)
        return self.get_paginated_response(WorkerSerializer(page, many=True).data)

    def retrieve(self, request: Request, pk: str) -> Response:
        found = Worker.objects.filter(name=pk).first()
        if found is None and pk.isdigit():
            found = Worker.objects.filter(pk=int(pk)).first()
        if found is None:
            raise Http404("no such worker")
        return Response(WorkerSerializer(member(found, request.user)).data)
