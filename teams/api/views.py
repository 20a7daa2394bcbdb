"""REST endpoints of teams, their projects and the projects' code snapshots.

Scoped to the caller's teams through teams.access; another team's objects answer 404.
"""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from teams.access import can_write, projects_for, teams_for, writable_team_ids
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
from teams.sources import SourceError, add_git, add_upload


class ProjectViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = ProjectSerializer

    def get_queryset(self):
        return projects_for(self.request.user)

    @extend_schema(request=ProjectCreateSerializer, responses={201: ProjectSerializer})
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

    @extend_schema(request=SourceCreateSerializer, responses={201: SourceSerializer})
    @action(
        detail=True, methods=["get", "post"], parser_classes=[MultiPartParser, BoundedJSONParser]
    )
    def sources(self, request: Request, pk: str | None = None) -> Response:
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
        except SourceError as exc:
            field = "archive" if data.get("archive") else "git_url"
            raise ValidationError({field: [str(exc)]}) from exc
        return Response(SourceSerializer(snapshot).data, status=201)

    @extend_schema(request=ApiDecisionInputSerializer, responses={200: ApiDecisionSerializer})
    @action(detail=True, methods=["get", "post"], url_path="api-decisions")
    def api_decisions(self, request: Request, pk: str | None = None) -> Response:
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

    @extend_schema(request=PortingSettingsSerializer, responses={200: PortingSettingsSerializer})
    @action(detail=True, methods=["get", "put"], url_path="porting-settings")
    def porting_settings(self, request: Request, pk: str | None = None) -> Response:
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


class TeamViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = TeamSerializer

    def get_queryset(self):
        return teams_for(self.request.user)
