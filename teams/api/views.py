"""REST endpoints of teams, their projects and the projects' code snapshots.

Scoped to the caller's teams through teams.access; another team's objects answer 404.
"""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_view
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from teams.access import can_write, projects_for, teams_for, writable_team_ids
from teams.api import examples as ex
from teams.api.parsers import BoundedJSONParser
from teams.api.serializers import (
    ApiDecisionInputSerializer,
    ApiDecisionSerializer,
    PortingSettingsSerializer,
    ProjectCreateSerializer,
    ProjectSerializer,
    SourceCreateSerializer,
    SourceSerializer,
    TeamSerializer,
)
from teams.models import AdoptionProject, Team
from teams.porting import (
    PortingInputError,
    decisions_of,
    record_decision,
    save_porting_settings,
)
from teams.sources import (
    BROKER_DOWN_NOTE,
    NotAdmin,
    SourceError,
    TooManyUploads,
    add_git,
    add_upload,
    current_code,
    source_of,
    switch_lineage,
)

_DECISION = {
    "api": "cudaGraphExecNodeSetParams",
    "decision": "port",
    "replacement": "",
    "note": "rewrite the graph update by hand in phase 2",
    "decided_by": "alice",
    "updated_at": "2026-12-01T10:00:00Z",
}
_SETTINGS = {"vendored": ["third_party/**"], "not_vendored": [], "hazards_off": []}
_CURRENT = {
    "lineage": "upload app",
    "source": 12,
    "chosen_by": None,
    "chosen_at": None,
    "waiting": [
        {"source": 14, "lineage": "upload util", "name": "util.tar.gz", "why": "another lineage"}
    ],
}


@extend_schema_view(
    list=extend_schema(
        summary="List projects",
        description="Your teams' adoption projects: codebases being ported to ROCm.",
        examples=[ex.PROJECTS],
    ),
    retrieve=extend_schema(
        summary="Read one project",
        description="One project of your teams; another team's answers 404.",
        examples=[ex.PROJECT_EXAMPLE],
    ),
)
class ProjectViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = ProjectSerializer

    def get_queryset(self):
        return projects_for(self.request.user)

    @extend_schema(
        summary="Create a project",
        description=(
            "A project in a team you can write to: a codebase, where it runs today and the "
            "GPUs it should run on. The name is unique within the team (400 otherwise)."
        ),
        request=ProjectCreateSerializer,
        responses={201: ProjectSerializer},
        examples=[ex.PROJECT_CREATE, ex.PROJECT_EXAMPLE],
    )
    def create(self, request: Request) -> Response:
        form = ProjectCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = dict(form.validated_data)
        team = Team.objects.filter(
            pk__in=writable_team_ids(request.user), slug=data.pop("team")
        ).first()
        if team is None:
            raise ValidationError({"team": ["No team of that slug that you can write to."]})
        if AdoptionProject.objects.filter(team=team, name=data["name"]).exists():
            raise ValidationError({"name": ["This team already has a project of that name."]})
        project = AdoptionProject.objects.create(team=team, **data)
        location = reverse("api:project-detail", args=[project.pk])
        return Response(ProjectSerializer(project).data, status=201, headers={"Location": location})

    @extend_schema(
        methods=["GET"],
        summary="List a project's sources",
        description="The project's code snapshots, newest first, with their status.",
        responses=SourceSerializer(many=True),
        examples=[ex.SOURCES],
    )
    @extend_schema(
        methods=["POST"],
        summary="Add a source to a project",
        description=(
            "Upload an archive (multipart, checked for links and paths out of the tree "
            "before it is kept) or name a git URL; a worker extracts or clones it, and the "
            "snapshot is ready when its status says so. Viewers get 403."
        ),
        request=SourceCreateSerializer,
        responses={201: SourceSerializer},
        examples=[ex.SOURCE_CREATE, ex.SOURCE_EXAMPLE],
    )
    @action(
        detail=True, methods=["get", "post"], parser_classes=[MultiPartParser, BoundedJSONParser]
    )
    def sources(
        self, request: Request, pk: str | None = None, format: str | None = None
    ) -> Response:
        """The project's code snapshots; POST an archive (multipart) or a git URL."""
        project = self.get_object()
        if request.method == "GET":
            page = self.paginate_queryset(project.sources.all())
            return self.get_paginated_response(SourceSerializer(page, many=True).data)
        if not can_write(request.user, project.team_id):
            return Response({"detail": "Viewers cannot add sources."}, status=403)
        form = SourceCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        try:
            if archive := data.get("archive"):
                snapshot = add_upload(
                    project,
                    archive,
                    archive.name,
                    request.user,
                    archive.size,
                    lineage=data.get("lineage", ""),
                )
            else:
                snapshot = add_git(
                    project,
                    data["git_url"],
                    data.get("ref", ""),
                    request.user,
                    lineage=data.get("lineage", ""),
                )
        except TooManyUploads as exc:
            return Response({"detail": str(exc)}, status=429)
        except SourceError as exc:
            field = "archive" if data.get("archive") else "git_url"
            raise ValidationError({field: [str(exc)]}) from exc
        snapshot.refresh_from_db()  # the task was sent on commit, or could not be
        if snapshot.awaiting_broker:
            # Kept pending and sent by the dispatcher once the broker answers, as a job is:
            # 202, not 201, as for a job the broker could not take.
            body = {**SourceSerializer(snapshot).data, "detail": BROKER_DOWN_NOTE}
            return Response(body, status=202)
        return Response(SourceSerializer(snapshot).data, status=201)

    @extend_schema(
        methods=["GET"],
        summary="The project's per-API decisions",
        description="The team's decision on each API group HIP lacks (port by hand, replace "
        "with a library call, stub, drop, wontfix), kept by name across re-scans.",
        responses={200: ApiDecisionSerializer(many=True)},
        examples=[OpenApiExample("one decision", value=[_DECISION], response_only=True)],
    )
    @extend_schema(
        methods=["POST"],
        summary="Record a per-API decision",
        description="Records (or changes) the decision on one API group; a library "
        "replacement names the call. Viewers get 403; a bad value is a 400 naming its field.",
        request=ApiDecisionInputSerializer,
        responses={200: ApiDecisionSerializer},
        examples=[
            OpenApiExample(
                "replace with a library call",
                value={"api": "cublasGemmEx", "decision": "library",
                       "replacement": "hipblasLtMatmul", "note": "fp8 path"},
                request_only=True,
            ),
            OpenApiExample("recorded", value=_DECISION, response_only=True),
        ],
    )  # fmt: skip
    @action(detail=True, methods=["get", "post"], url_path="api-decisions")
    def api_decisions(
        self, request: Request, pk: str | None = None, format: str | None = None
    ) -> Response:
        """The team's decisions on the APIs HIP lacks; POST records (or changes) one."""
        project = self.get_object()
        if request.method == "GET":
            rows = sorted(decisions_of(project).values(), key=lambda d: d.api)
            return Response(ApiDecisionSerializer(rows, many=True).data)
        if not can_write(request.user, project.team_id):
            return Response({"detail": "Viewers cannot record decisions."}, status=403)
        form = ApiDecisionInputSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            row = record_decision(project, user=request.user, **form.validated_data)
        except PortingInputError as exc:
            raise ValidationError({exc.field: [exc.message]}) from exc
        return Response(ApiDecisionSerializer(row).data)

    @extend_schema(
        methods=["GET"],
        summary="The project's scan settings",
        description="How its scans read its code: extra vendored globs, paths taken back "
        "from the vendored set, hazard rules switched off.",
        responses={200: PortingSettingsSerializer},
        examples=[OpenApiExample("settings", value=_SETTINGS, response_only=True)],
    )
    @extend_schema(
        methods=["PUT"],
        summary="Change the project's scan settings",
        description="Replaces the settings; the next scan uses them. Unknown rules or bad "
        "globs are a 400 naming the field.",
        request=PortingSettingsSerializer,
        responses={200: PortingSettingsSerializer},
        examples=[
            OpenApiExample("settings", value=_SETTINGS, request_only=True),
            OpenApiExample("saved", value=_SETTINGS, response_only=True),
        ],
    )
    @action(detail=True, methods=["get", "put"], url_path="porting-settings")
    def porting_settings(
        self, request: Request, pk: str | None = None, format: str | None = None
    ) -> Response:
        """How the project's scans read its code: vendored globs, hazard rules off."""
        project = self.get_object()
        if request.method == "GET":
            return Response(
                {k: project.porting_setting(k) for k in ("vendored", "not_vendored", "hazards_off")}
            )
        if not can_write(request.user, project.team_id):
            return Response({"detail": "Viewers cannot change scan settings."}, status=403)
        form = PortingSettingsSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            return Response(save_porting_settings(project, dict(form.validated_data)))
        except PortingInputError as exc:
            raise ValidationError({exc.field: [exc.message]}) from exc

    @extend_schema(
        methods=["GET"],
        summary="The project's current code",
        description="Which lineage (one codebase over time) the roadmap, the estimate and "
        "the steps read, its newest ready source, who chose it, and the newer sources of "
        "other lineages waiting for an admin to switch to them.",
        responses={200: OpenApiTypes.OBJECT},
        examples=[OpenApiExample("current", value=_CURRENT, response_only=True)],
    )
    @extend_schema(
        methods=["POST"],
        summary="Switch the project's current code",
        description="A team admin makes a ready source's lineage the current code: an "
        "unrelated upload never becomes it on its own. 403 for others.",
        request=OpenApiTypes.OBJECT,
        responses={200: OpenApiTypes.OBJECT},
        examples=[
            OpenApiExample("switch", value={"source": 14}, request_only=True),
            OpenApiExample(
                "switched", value={**_CURRENT, "lineage": "upload util"}, response_only=True
            ),
        ],
    )
    @action(detail=True, methods=["get", "post"], url_path="current-code")
    def current_code(
        self, request: Request, pk: str | None = None, format: str | None = None
    ) -> Response:
        """The lineage the decision reads; POST {"source": id} switches it (admins)."""
        project = self.get_object()
        if request.method == "POST":
            source = source_of(project, request.data.get("source"))
            if source is None:
                raise ValidationError({"source": ["not a source of this project"]})
            try:
                switch_lineage(project, source, request.user)
            except NotAdmin as exc:
                return Response({"detail": str(exc)}, status=403)
            except SourceError as exc:
                raise ValidationError({"source": [str(exc)]}) from exc
        return Response(current_code(project))


@extend_schema_view(
    list=extend_schema(
        summary="List your teams",
        description="The teams you belong to; jobs and projects are scoped to them.",
        examples=[ex.TEAMS],
    ),
    retrieve=extend_schema(
        summary="Read one team",
        description="One of your teams; another team answers 404.",
        examples=[ex.TEAM_EXAMPLE],
    ),
)
class TeamViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = TeamSerializer

    def get_queryset(self):
        return teams_for(self.request.user)
