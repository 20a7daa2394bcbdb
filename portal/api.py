"""The porting report as JSON, beside its page (composed in config/api_router.py).

Here, not in teams' project endpoints, because the report reads jobs and their
measurements (portal.porting), a layer above teams. It moves to roadmap/ with the
report once that app exists.
"""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from django.urls import path
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.porting import porting_report
from teams.access import projects_for


class PortingReportView(APIView):
    """The HIPIFY assessment of the project: totals, burn-down, files, compile status."""

    @extend_schema(
        summary="A project's porting report",
        description=(
            "The HIPIFY assessment of the project's newest scans: totals of CUDA references "
            "and those HIPIFY cannot convert, the burn-down across scans, per-file counts and "
            "the compile status per target architecture; the same as the report page."
        ),
        responses={200: dict},
        examples=[
            OpenApiExample(
                "a project half ported",
                value={
                    "totals": {"files": 812, "cuda_references": 1460, "unsupported": 38},
                    "burn_down": [{"scanned_at": "2026-12-01T09:30:00Z", "unsupported": 38}],
                    "files": [{"path": "src/flux.cu", "references": 120, "unsupported": 4}],
                    "compile": {"gfx942": "succeeded"},
                },
                response_only=True,
            )
        ],
    )
    def get(self, request: Request, pk: int) -> Response:
        project = get_object_or_404(projects_for(request.user), pk=pk)
        return Response(porting_report(project, lineage=request.query_params.get("lineage")))


routes: list = []
urlpatterns = [
    path(
        "projects/<int:pk>/porting-report/",
        PortingReportView.as_view(),
        name="project-porting-report",
    ),
]
