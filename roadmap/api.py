"""The roadmap through the API: the whole document, overrides, checklist answers, the report.

Team-scoped like every project endpoint: a project of another team is a 404; viewers
read, members and admins write.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from django.urls import path
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from roadmap.checklist import ANSWERS, QUESTIONS
from roadmap.criteria import CRITERIA
from roadmap.gates import (
    OVERRIDE_DAYS_DEFAULT,
    OVERRIDE_DAYS_MAX,
    NotAllowed,
    OverrideError,
    override_gate,
    revoke_override,
)
from roadmap.models import ChecklistAnswer, DecisionContext, GateOverride, Phase, checked_weights
from roadmap.plan import ensure_roadmap
from roadmap.report import markdown, roadmap_document
from teams.access import can_write, projects_for


def _project(request: Request, pk: int, *, write: bool = False):
    project = get_object_or_404(projects_for(request.user), pk=pk)
    if write and not can_write(request.user, project.team_id):
        raise PermissionDenied("Viewers cannot change the roadmap.")
    return project


class OverrideSerializer(serializers.Serializer):
    phase = serializers.IntegerField(min_value=1, max_value=4)
    criterion = serializers.ChoiceField(choices=[c.name for c in CRITERIA])
    reason = serializers.CharField(max_length=5000)
    expires_in_days = serializers.IntegerField(
        min_value=1, max_value=OVERRIDE_DAYS_MAX, default=OVERRIDE_DAYS_DEFAULT
    )


class AnswerSerializer(serializers.Serializer):
    question = serializers.ChoiceField(choices=[q.key for q in QUESTIONS])
    answer = serializers.ChoiceField(choices=list(ANSWERS))
    note = serializers.CharField(required=False, allow_blank=True, max_length=2000, default="")


class RoadmapView(APIView):
    @extend_schema(
        operation_id="project_roadmap",
        summary="A project's roadmap",
        description=(
            "The four phases with their status (derived from the gates), planned and actual "
            "dates, tasks (state from the jobs of the kinds that serve them), each exit "
            "criterion's verdict (passed, failed, unavailable = not available yet, "
            "not_needed) with evidence and overrides, the decision checklist and the "
            "recommendation with its reasons."
        ),
        responses={200: dict},
        examples=[
            OpenApiExample(
                "phase 1 of a new project",
                value={
                    "project": {"id": 3, "name": "cfd", "team": "solvers"},
                    "phases": [
                        {
                            "number": 1,
                            "title": "Assessment & planning",
                            "status": "active",
                            "gate_open": False,
                            "criteria": [
                                {
                                    "name": "scan_of_current_code",
                                    "status": "passed",
                                    "detail": "Scan 41 of source 9: 12 references in "
                                    "code to APIs HIP lacks.",
                                }
                            ],
                        }
                    ],
                    "recommendation": {"verdict": "undecided", "title": "Not yet decidable"},
                },
                response_only=True,
            )
        ],
    )
    def get(self, request: Request, pk: int) -> Response:
        return Response(roadmap_document(_project(request, pk)))


class OverrideView(APIView):
    @extend_schema(
        operation_id="project_roadmap_override",
        summary="Override one exit criterion of a phase",
        description=(
            "Opens one criterion of a gate by hand; who, when and why are recorded and shown."
        ),
        request=OverrideSerializer,
        responses={201: dict, 400: dict, 403: dict},
        examples=[
            OpenApiExample(
                "override",
                value={
                    "phase": 1,
                    "criterion": "libraries_compared",
                    "reason": "MI300X time is booked for next month; vendor figures until then",
                },
                request_only=True,
            )
        ],
    )
    def post(self, request: Request, pk: int) -> Response:
        project = _project(request, pk, write=True)
        data = OverrideSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        ensure_roadmap(project)  # an override may come before anyone read the roadmap
        phase = get_object_or_404(Phase, project=project, number=data.validated_data["phase"])
        try:
            o = override_gate(
                phase,
                data.validated_data["criterion"],
                data.validated_data["reason"],
                request.user,
                days=data.validated_data["expires_in_days"],
            )
        except NotAllowed as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_403_FORBIDDEN)
        except OverrideError as exc:
            return Response({"criterion": [str(exc)]}, status=status.HTTP_400_BAD_REQUEST)
        return Response(_override(o), status=status.HTTP_201_CREATED)


def _override(o: GateOverride) -> dict:
    return {
        "id": o.pk,
        "phase": o.phase.number,
        "criterion": o.criterion,
        "reason": o.reason,
        "by": o.by.get_username() if o.by else None,
        "at": o.at,
        "expires_at": o.expires_at,
        "revoked_at": o.revoked_at,
        "revoked_by": o.revoked_by.get_username() if o.revoked_by else None,
    }


class OverrideRevokeView(APIView):
    @extend_schema(
        operation_id="project_roadmap_override_revoke",
        summary="Revoke a gate override",
        description=(
            "Ends an override before its expiry; its criterion counts again. The override's "
            "author, a team admin or the phase's owner; 403 for others."
        ),
        request=None,
        responses={200: dict, 403: dict, 404: dict},
        examples=[
            OpenApiExample(
                "revoked",
                value={"id": 3, "phase": 1, "criterion": "libraries_compared",
                       "revoked_by": "lead", "revoked_at": "2026-12-04T10:00:00Z"},
                response_only=True,
            )
        ],
    )  # fmt: skip
    def delete(self, request: Request, pk: int, override_id: int) -> Response:
        project = _project(request, pk, write=True)
        o = get_object_or_404(GateOverride, pk=override_id, phase__project=project)
        try:
            revoke_override(o, request.user)
        except NotAllowed as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_403_FORBIDDEN)
        return Response(_override(o))


class ContextSerializer(serializers.ModelSerializer):
    workload_weights = serializers.DictField(required=False)

    class Meta:
        model = DecisionContext
        fields = [*DecisionContext.TEAM_FIELDS, "confirmed_cases"]

    def validate_confirmed_cases(self, value: list) -> list:
        if not isinstance(value, list) or len(value) > 500:
            raise serializers.ValidationError("a list of at most 500 case keys")
        if not all(isinstance(k, str) and 0 < len(k) <= 1000 for k in value):
            raise serializers.ValidationError("each a case key as the report names it")
        return sorted(set(value))

    def validate_workload_weights(self, value: dict) -> dict:
        try:
            return checked_weights(value)
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.messages) from exc


_CONTEXT = {
    "time_window_weeks": 6,
    "engineers": 2,
    "multi_gpu": False,
    "multi_vendor_fleet": True,
    "new_cluster": False,
    "needs_low_level_access": False,
    "budget_limited": False,
    "current_gpu_price": None,
    "candidate_gpu_price": None,
    "workload_weights": {"gemm bf16": 3, "gemm int8": 0},
    "confirmed_cases": [],
}


class ContextView(APIView):
    """What only the team knows and the recommendation weighs: its window, engineers,
    scenario, prices and which workloads matter."""

    @extend_schema(
        operation_id="project_roadmap_context",
        summary="Read the project's decision context",
        description="The time window (weeks), engineers, the ROCm scenarios that hold, GPU "
        "prices and the workload weights the recommendation reads; empty until set.",
        responses={200: ContextSerializer},
        examples=[OpenApiExample("context", value=_CONTEXT, response_only=True)],
    )
    def get(self, request: Request, pk: int) -> Response:
        project = _project(request, pk)
        context = getattr(project, "decision_context", None) or DecisionContext(project=project)
        return Response(ContextSerializer(context).data)

    @extend_schema(
        operation_id="project_roadmap_context_set",
        summary="Set the project's decision context",
        description="Changes the fields given (PATCH-like: the others keep their values); the "
        "recommendation reads them at once. Viewers 403.",
        request=ContextSerializer,
        responses={200: ContextSerializer, 400: dict, 403: dict},
        examples=[
            OpenApiExample("set", value={"time_window_weeks": 6, "engineers": 2},
                           request_only=True),
            OpenApiExample("saved", value=_CONTEXT, response_only=True),
        ],
    )  # fmt: skip
    def put(self, request: Request, pk: int) -> Response:
        project = _project(request, pk, write=True)
        context, _ = DecisionContext.objects.get_or_create(project=project)  # two PUTs at once
        form = ContextSerializer(context, data=request.data, partial=True)
        form.is_valid(raise_exception=True)
        form.save(project=project)
        return Response(form.data)


class ChecklistView(APIView):
    @extend_schema(
        operation_id="project_roadmap_checklist_answer",
        summary="Answer one question of the decision checklist",
        description="The team's answer counts over the data's; both are shown with the evidence.",
        request=AnswerSerializer,
        responses={200: dict, 400: dict, 403: dict},
        examples=[
            OpenApiExample(
                "answer",
                value={
                    "question": "toolchain",
                    "answer": "partly",
                    "note": "two of five engineers know HIP",
                },
                request_only=True,
            )
        ],
    )
    def post(self, request: Request, pk: int) -> Response:
        project = _project(request, pk, write=True)
        data = AnswerSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        ChecklistAnswer.objects.update_or_create(
            project=project,
            question=v["question"],
            defaults={"answer": v["answer"], "note": v["note"], "by": request.user},
        )
        return Response({"question": v["question"], "answer": v["answer"], "note": v["note"]})


class ReportView(APIView):
    @extend_schema(
        operation_id="project_roadmap_report",
        summary="The roadmap report as Markdown",
        description=(
            "What the report page shows, as Markdown (the HTML and PDF are at "
            "/projects/<id>/report/ and /projects/<id>/report.pdf)."
        ),
        responses={
            (200, "text/markdown"): OpenApiResponse(
                response=OpenApiTypes.STR,
                description="the report",
                examples=[
                    OpenApiExample(
                        "the report",
                        value="# Adoption roadmap: cfd (solvers)\n\n"
                        "## Recommendation: Not yet decidable\n",
                    )
                ],
            )
        },
    )
    def get(self, request: Request, pk: int) -> HttpResponse:
        return HttpResponse(
            markdown(
                roadmap_document(_project(request, pk)), base=request.build_absolute_uri("/")[:-1]
            ),
            content_type="text/markdown; charset=utf-8",
        )


routes: list = []
urlpatterns = [
    path("projects/<int:pk>/roadmap/", RoadmapView.as_view(), name="project-roadmap"),
    path(
        "projects/<int:pk>/roadmap/overrides/",
        OverrideView.as_view(),
        name="project-roadmap-overrides",
    ),
    path(
        "projects/<int:pk>/roadmap/overrides/<int:override_id>/",
        OverrideRevokeView.as_view(),
        name="project-roadmap-override-revoke",
    ),
    path(
        "projects/<int:pk>/roadmap/context/",
        ContextView.as_view(),
        name="project-roadmap-context",
    ),
    path(
        "projects/<int:pk>/roadmap/checklist/",
        ChecklistView.as_view(),
        name="project-roadmap-checklist",
    ),
    path(
        "projects/<int:pk>/roadmap/report.md", ReportView.as_view(), name="project-roadmap-report"
    ),
]
