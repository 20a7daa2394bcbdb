"""The profile's GEMM rows as another runner version may write them: a row the roadmap
cannot read decides nothing, and the page still renders (review of 12f477e)."""

from __future__ import annotations

import json

import pytest

from roadmap.criteria import Facts
from roadmap.recommend import performance_ratio, profile_gemm_flops
from tests.factories import make_project
from tests.roadmap.conftest import H200, derived, h200_document, ingest

pytestmark = pytest.mark.django_db

PROFILES = H200.parent / "tune-h200"


@pytest.fixture
def project(team):
    project = make_project(team, "llm")
    document = h200_document()
    ingest(project, document)
    ingest(project, derived(document, {"int8": 3.0}, 0.85))
    return project


def profile_with(project, rows: list):
    document = json.loads((PROFILES / "replay/transformer-profile.json").read_text())
    document["summary"]["gemm_shapes"] = [*document["summary"]["gemm_shapes"], *rows]
    job = ingest(project, document)
    project.refresh_from_db()
    return job


@pytest.mark.parametrize(
    "row",
    [
        {"m": 4096, "n": 4096, "k": 4096, "calls": 10**6},  # no precision
        {"m": -4096, "n": 4096, "k": 4096, "calls": 10**6, "precision": "fp32"},
        {"m": 4096, "n": 4096, "k": 4096, "calls": 10**6, "precision": "fp32", "batch": None},
        "gemm",  # not a mapping at all
    ],
)
def test_a_profile_row_the_roadmap_cannot_read_decides_nothing(project, row):
    job = profile_with(project, [row])
    found = profile_gemm_flops(Facts(project))
    assert found is not None and found[0] == job
    assert set(found[1]) == {"bf16"} and found[1]["bf16"] > 0
    table = {g["workload"]: g for g in performance_ratio(Facts(project))["table"]}
    assert table["gemm bf16"]["weight"] == 7
    assert table["gemm fp32"]["weight"] == 0
