"""Baselines and verdicts over REST (composed in config/api_router.py under /api/v1/).

One module for both, kept apart from the comparison endpoints so the two grow without
touching each other: serializers, view sets and the routes they add.
"""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    extend_schema,
    extend_schema_view,
)
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from jobs.access import jobs_for
from results import services
from results.models import Baseline, Verdict, VerdictKind
from teams.access import can_write, team_ids


class BaselineSerializer(serializers.ModelSerializer):
    class Meta:
        model = Baseline
        fields = ["id", "project", "benchmark", "fingerprint", "job", "note", "created_at"]
        read_only_fields = fields


class PinSerializer(serializers.Serializer):
    job = serializers.IntegerField(help_text="the succeeded job to pin")
    benchmark = serializers.CharField(
        required=False, allow_blank=True, max_length=128,
        help_text="one benchmark of the job; all it measured when left out",
    )  # fmt: skip
    note = serializers.CharField(required=False, allow_blank=True, max_length=500)


class VerdictSerializer(serializers.ModelSerializer):
    class Meta:
        model = Verdict
        fields = [
            "id", "job", "baseline", "baseline_job", "benchmark", "case", "metric", "unit",
            "verdict", "baseline_value", "value", "ratio", "ratio_low", "ratio_high",
            "p_value", "detail", "acknowledged_at", "created_at",
        ]  # fmt: skip
        read_only_fields = fields


class AcknowledgeSerializer(serializers.Serializer):
    job = serializers.IntegerField(help_text="the job whose regressions are acknowledged")


_BASELINE = {
    "id": 5,
    "project": 3,
    "benchmark": "gemm",
    "fingerprint": "9f2c…",
    "job": 42,
    "note": "MI300X, ROCm 6.3.1",
    "created_at": "2026-12-01T09:30:00Z",
}
_VERDICT = {
    "id": 77,
    "job": 43,
    "baseline": 5,
    "baseline_job": 42,
    "benchmark": "gemm",
    "case": {"precision": "bf16", "m": 8192, "n": 8192, "k": 8192},
    "metric": "throughput",
    "unit": "TFLOP/s",
    "verdict": "regressed",
    "baseline_value": 690.1,
    "value": 621.0,
    "ratio": 0.9,
    "ratio_low": 0.89,
    "ratio_high": 0.91,
    "p_value": 0.00001,
    "detail": {"threshold": 0.03},
    "acknowledged_at": None,
    "created_at": "2026-12-01T10:00:00Z",
}


def _answer(name: str, value: object, **kwargs: object) -> OpenApiExample:
    return OpenApiExample(name, value=value, response_only=True, **kwargs)


@extend_schema_view(
    list=extend_schema(
        summary="List baselines",
        description="The baselines of your teams' projects, newest first.",
        parameters=[OpenApiParameter("project", int), OpenApiParameter("benchmark", str)],
        examples=[_answer("a GEMM baseline", _BASELINE)],
    ),
    retrieve=extend_schema(
        summary="Get a baseline",
        description="One baseline of a scope.",
        examples=[_answer("a GEMM baseline", _BASELINE)],
    ),
    destroy=extend_schema(
        summary="Unpin a baseline",
        description="Later jobs of the scope are no longer compared; verdicts already "
        "written stay.",
        responses={204: None, 403: dict},
        examples=[
            _answer("a viewer", {"detail": "Viewers cannot unpin baselines."}, status_codes=["403"])
        ],
    ),
)
class BaselineViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    serializer_class = BaselineSerializer

    def get_queryset(self):
        queryset = services.baselines_for(self.request.user)
        params = self.request.query_params
        if value := params.get("project"):
            if not value.isdigit():
                raise ValidationError({"project": ["must be a project id"]})
            queryset = queryset.filter(project_id=int(value))
        if value := params.get("benchmark"):
            queryset = queryset.filter(benchmark=value)
        return queryset

    @extend_schema(
        summary="Pin a job as baseline",
        description="Make a succeeded job the baseline of its project + benchmark + "
        "environment identity (replacing the scope's baseline). Later succeeded jobs of "
        "that scope are compared with it when they finish. Answers the baselines pinned.",
        request=PinSerializer,
        responses={201: BaselineSerializer(many=True)},
        examples=[OpenApiExample("pin every benchmark of job 42", value={"job": 42})],
    )
    def create(self, request: Request, *args: object, **kwargs: object) -> Response:
        form = PinSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        job = jobs_for(request.user).select_related("environment").filter(pk=data["job"]).first()
        if job is None:
            raise ValidationError({"job": [f"No job {data['job']} among your teams'."]})
        if not can_write(request.user, job.team_id):
            return Response({"detail": "Viewers cannot pin baselines."}, status=403)
        try:
            pinned = services.pin_baseline(
                job, user=request.user, benchmark=data.get("benchmark", ""),
                note=data.get("note", ""),
            )  # fmt: skip
        except services.BaselineError as exc:
            raise ValidationError(exc.errors) from exc
        return Response(BaselineSerializer(pinned, many=True).data, status=status.HTTP_201_CREATED)

    def perform_destroy(self, instance: Baseline) -> None:
        if not can_write(self.request.user, instance.project.team_id):
            raise PermissionDenied("Viewers cannot unpin baselines.")
        services.unpin_baseline(instance)


@extend_schema_view(
    list=extend_schema(
        summary="List verdicts",
        description="Verdicts of your teams' jobs against their baselines: improved, "
        "regressed, unchanged, inconclusive (the run-to-run noise cannot rule out a change) or "
        "noisy (too noisy to conclude), each with the ratio of medians, "
        "its 95 % bootstrap interval and the Mann-Whitney U p-value.",
        parameters=[
            OpenApiParameter("job", int),
            OpenApiParameter("verdict", str, enum=VerdictKind.values),
            OpenApiParameter("open", bool, description="only unacknowledged regressions"),
        ],
        examples=[_answer("a regression", _VERDICT)],
    ),
    retrieve=extend_schema(
        summary="Get a verdict",
        description="One case and metric of a job against its baseline.",
        examples=[_answer("a regression", _VERDICT)],
    ),
)
class VerdictViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = VerdictSerializer

    def get_queryset(self):
        queryset = Verdict.objects.filter(job__team_id__in=team_ids(self.request.user))
        params = self.request.query_params
        if value := params.get("job"):
            if not value.isdigit():
                raise ValidationError({"job": ["must be a job id"]})
            queryset = queryset.filter(job_id=int(value))
        if value := params.get("verdict"):
            if value not in VerdictKind.values:
                raise ValidationError({"verdict": [f"one of {', '.join(VerdictKind.values)}"]})
            queryset = queryset.filter(verdict=value)
        if params.get("open") in ("1", "true"):
            queryset = queryset.filter(verdict=VerdictKind.REGRESSED, acknowledged_at__isnull=True)
        return queryset.order_by("-created_at", "-id")

    @extend_schema(
        summary="Acknowledge a job's regressions",
        description="Mark the job's regressions as seen; they leave the open list.",
        request=AcknowledgeSerializer,
        responses={200: dict},
        examples=[OpenApiExample("job 43", value={"job": 43})],
    )
    @action(detail=False, methods=["post"])
    def acknowledge(self, request: Request, format: str | None = None) -> Response:
        form = AcknowledgeSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        job = get_object_or_404(jobs_for(request.user), pk=form.validated_data["job"])
        if not can_write(request.user, job.team_id):
            return Response({"detail": "Viewers cannot acknowledge regressions."}, status=403)
        return Response({"acknowledged": services.acknowledge(Verdict.objects.filter(job=job))})


routes = [
    ("baselines", BaselineViewSet, "baseline"),
    ("verdicts", VerdictViewSet, "verdict"),
]
urlpatterns: list = []
