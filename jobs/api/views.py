"""REST endpoints: validate, check the team, call one service, answer.

Everything is scoped to the caller's teams through teams.access; another
team's objects answer 404.
"""

from __future__ import annotations

from django.http import FileResponse, Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from jobs import services
from jobs.access import artifacts_for, jobs_for
from jobs.api.authentication import rotate_token, token_expires_at
from jobs.api.serializers import (
    ArtifactSerializer,
    EnvironmentSerializer,
    EventPageSerializer,
    JobEventSerializer,
    JobSerializer,
    JobSubmitSerializer,
    KindSerializer,
    MeasurementSerializer,
    TokenSerializer,
)
from jobs.choices import JobStatus, LaunchType
from jobs.models import Artifact, Environment, IllegalTransition, Job, TunedFile
from stack.kinds import KINDS
from teams.access import can_write, projects_for, team_ids, teams_for
from teams.models import SourceSnapshot


class JobViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    viewsets.GenericViewSet,
):
    serializer_class = JobSerializer

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
        parameters=[
            OpenApiParameter("status", str, description="comma-separated statuses"),
            OpenApiParameter("kind", str),
            OpenApiParameter("project", int),
            OpenApiParameter("team", str, description="team slug"),
        ]
    )
    def list(self, request: Request, *args: object, **kwargs: object) -> Response:
        return super().list(request, *args, **kwargs)

    @extend_schema(request=JobSubmitSerializer, responses={201: JobSerializer, 202: JobSerializer})
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

    @extend_schema(request=None, responses={202: JobSerializer, 409: None})
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
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
        parameters=[
            OpenApiParameter("after", int, description="last event id seen (0 = from start)"),
            OpenApiParameter("limit", int, description="at most this many (≤ 1000)"),
        ],
        responses=EventPageSerializer,
    )
    @action(detail=True, methods=["get"])
    def events(self, request: Request, pk: str | None = None) -> Response:
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

    @extend_schema(responses=ArtifactSerializer(many=True))
    @action(detail=True, methods=["get"])
    def artifacts(self, request: Request, pk: str | None = None) -> Response:
        job = self.get_object()
        page = self.paginate_queryset(job.artifacts.all())
        return self.get_paginated_response(ArtifactSerializer(page, many=True).data)

    @extend_schema(responses=MeasurementSerializer(many=True))
    @action(detail=True, methods=["get"])
    def measurements(self, request: Request, pk: str | None = None) -> Response:
        job = self.get_object()
        page = self.paginate_queryset(job.measurements.all())
        return self.get_paginated_response(MeasurementSerializer(page, many=True).data)

    @extend_schema(request=None, responses={201: JobSerializer})
    @action(detail=True, methods=["post"])
    def rerun(self, request: Request, pk: str | None = None) -> Response:
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

    @extend_schema(responses={(200, "application/octet-stream"): bytes})
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


class EnvironmentViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = EnvironmentSerializer

    def get_queryset(self):
        visible = Job.objects.filter(team_id__in=team_ids(self.request.user)).values(
            "environment_id"
        )
        return Environment.objects.filter(pk__in=visible)


class KindListView(APIView):
    """The job kinds this server can run, with the JSON Schema of their params."""

    @extend_schema(responses=KindSerializer(many=True))
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

    @extend_schema(request=None, responses={201: TokenSerializer})
    def post(self, request: Request) -> Response:
        token = rotate_token(request.user)
        return Response(
            {"token": token.key, "created": token.created, "expires_at": token_expires_at(token)},
            status=status.HTTP_201_CREATED,
        )
