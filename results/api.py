"""Comparison and history over REST (composed in config/api_router.py under /api/v1/).

The same query parameters as the compare and history pages (results.compare parses
both), so a page's permalink and its API call differ only in the path.
"""

from __future__ import annotations

from django.urls import path
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from results.compare import CompareQuery, HistoryQuery, QueryError, compare, history
from stack.blas.gemm import FAMILY as GEMM
from stack.kinds.blas_bench import KIND as _BLAS

BLAS_BENCH = _BLAS.name  # the examples show a GEMM comparison
_FACET = "environment facet; repeat or comma-separate values to take any of them"

COMPARE_PARAMETERS = [
    OpenApiParameter(
        "jobs", str, description="job ids, comma-separated (at most 8); the oldest is the baseline"
    ),
    OpenApiParameter(
        "baseline", int, description="the job the others are divided by (default: the oldest)"
    ),
    OpenApiParameter("project", int, description="filter: the jobs of this project"),
    OpenApiParameter("kind", str, description="filter: the jobs of this kind"),
    OpenApiParameter("benchmark", str, description="only this benchmark's measurements"),
    OpenApiParameter("metric", str, description="only this metric"),
    OpenApiParameter("vendor", str, description=f"GPU vendor ({_FACET})"),
    OpenApiParameter("gpu_model", str, description=f"GPU model ({_FACET})"),
    OpenApiParameter("gpu_arch", str, description=f"GPU arch, e.g. gfx942 ({_FACET})"),
    OpenApiParameter("rocm", str, description=f"ROCm version ({_FACET})"),
    OpenApiParameter("cuda", str, description=f"CUDA version ({_FACET})"),
    OpenApiParameter("image_digest", str, description=f"image digest ({_FACET})"),
    OpenApiParameter("library", str, description="name:version of a library, e.g. rocblas:4.2.0"),
    OpenApiParameter("since", OpenApiTypes.DATE, description="jobs created on or after"),
    OpenApiParameter("until", OpenApiTypes.DATE, description="jobs created on or before"),
    OpenApiParameter("seed", int, description="bootstrap seed (default 0)"),
]

COMPARE_EXAMPLE = {
    "query": {"jobs": "41,42"},
    "seed": 0,
    "confidence": 0.95,
    "columns": [
        {
            "job": 41,
            "kind": BLAS_BENCH,
            "created_at": "2026-11-30T10:00:00+00:00",
            "baseline": True,
            "environment": {"fingerprint": "9f1c…", "gpu_vendor": "nvidia", "gpu_model": "H200"},
            "differences": [],
        },
        {
            "job": 42,
            "kind": BLAS_BENCH,
            "created_at": "2026-11-30T11:00:00+00:00",
            "baseline": False,
            "environment": {"fingerprint": "51ad…", "gpu_vendor": "amd", "gpu_model": "MI300X"},
            "differences": [
                {"what": "GPU vendor", "baseline": "nvidia", "current": "amd"},
                {"what": "GPU model", "baseline": "H200", "current": "MI300X"},
            ],
        },
    ],
    "rows": [
        {
            "benchmark": GEMM,
            "case": {"backend": "torch", "precision": "fp16", "m": 4096, "n": 4096, "k": 4096},
            "metric": "throughput",
            "unit": "TFLOP/s",
            "better": "higher",
            "flags": [],
            "cells": [
                {"job": 41, "value": 612.0, "unit": "TFLOP/s", "samples": 20, "ratio": None,
                 "reading": ""},
                {"job": 42, "value": 655.1, "unit": "TFLOP/s", "samples": 20,
                 "ratio": {"value": 1.07, "low": 1.05, "high": 1.09}, "reading": "better"},
            ],
        }
    ],
    "truncated": False,
}  # fmt: skip


def _parse(parser, params):  # type: ignore[no-untyped-def]
    try:
        return parser(params)
    except QueryError as exc:
        raise ValidationError({exc.field: [exc.message]}) from exc


class CompareView(APIView):
    @extend_schema(
        operation_id="results_compare",
        summary="Compare jobs like for like",
        description=(
            "Puts jobs side by side, one column each, aligned by case (benchmark + case "
            "parameters + metric). Name the jobs (`jobs=41,42`) or filter (project, kind, "
            "benchmark, environment facets, dates: the 8 newest matching jobs, oldest "
            "first). Each cell beside the baseline has the ratio of medians with a 95 % "
            "percentile-bootstrap interval over the raw samples and a reading in the "
            "metric's better direction; each column lists how its environment differs "
            "from the baseline's (GPU, ROCm/CUDA/library versions, image digest). Only "
            "your teams' jobs; an id you cannot see is a 400 like one that does not exist."
        ),
        parameters=COMPARE_PARAMETERS,
        responses={200: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT},
        examples=[OpenApiExample("two GPUs", value=COMPARE_EXAMPLE, response_only=True)],
        tags=["results"],
    )
    def get(self, request: Request) -> Response:
        query = _parse(CompareQuery.parse, request.query_params)
        return Response(_parse(lambda q: compare(request.user, q), query).as_dict())


class HistoryView(APIView):
    @extend_schema(
        operation_id="results_history",
        summary="One case's values over time, with change points",
        description=(
            "The newest runs (up to `limit`, at most 1000) of one case — benchmark, metric "
            "and case parameters as JSON — on one environment identity (the environment "
            "fingerprint: same machine and stack), oldest first. `change_points` are the "
            "indices where a new segment starts (results.detect: PELT, each step confirmed "
            "by Mann-Whitney U and a 3 % effect); each segment has its median and the "
            "ratio to the previous segment with a 95 % bootstrap interval."
        ),
        parameters=[
            OpenApiParameter("benchmark", str, required=True),
            OpenApiParameter("metric", str, required=True),
            OpenApiParameter(
                "case", str, description='the case parameters as JSON, e.g. {"m": 4096}'
            ),
            OpenApiParameter("fingerprint", str, required=True, description="environment identity"),
            OpenApiParameter("limit", int, description="the newest this many runs (2 to 1000)"),
        ],
        responses={200: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT},
        examples=[
            OpenApiExample(
                "a step down",
                value={
                    "query": {
                        "benchmark": GEMM,
                        "metric": "throughput",
                        "case": "{}",
                        "fingerprint": "9f1c0e…",
                    },
                    "unit": "TFLOP/s",
                    "better": "higher",
                    "points": [
                        {"job": 7, "at": "2026-11-30T10:00:00+00:00", "value": 612.0, "samples": 20}
                    ],
                    "change_points": [30],
                    "segments": [
                        {"start": 0, "end": 30, "median": 612.0, "ratio": None},
                        {
                            "start": 30,
                            "end": 60,
                            "median": 551.2,
                            "ratio": {"value": 0.9, "low": 0.89, "high": 0.91},
                        },
                    ],
                },
                response_only=True,
            )
        ],
        tags=["results"],
    )
    def get(self, request: Request) -> Response:
        query = _parse(HistoryQuery.parse, request.query_params)
        return Response(history(request.user, query).as_dict())


routes: list = []
urlpatterns = [
    path("compare/", CompareView.as_view(), name="compare"),
    path("history/", HistoryView.as_view(), name="history"),
]
