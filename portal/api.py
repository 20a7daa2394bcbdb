"""The porting report as JSON, beside its page (composed in config/api_router.py).

Here, not in teams' project endpoints, because the report reads jobs and their
measurements (portal.porting), a layer above teams. It moves to roadmap/ with the
report once that app exists.
"""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from django.urls import path
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.porting import porting_report
from teams.access import projects_for


class PortingReportView(APIView):
    """The HIPIFY assessment of the project: totals, burn-down, files, compile status."""

    @extend_schema(responses={200: dict})
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
