"""The compare and history endpoints: the same answers as the pages, scoped, documented."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from jobs.choices import JobStatus
from tests.factories import make_environment, make_job, make_sampled_measurement, make_team

pytestmark = pytest.mark.django_db

BASE = [10.0, 10.2, 9.8, 10.1, 9.9]
FASTER = [12.0, 12.1, 11.9, 12.2, 11.8]


@pytest.fixture
def two_jobs(team):
    a = make_job(team, status=JobStatus.SUCCEEDED, environment=make_environment())
    b = make_job(team, status=JobStatus.SUCCEEDED, environment=make_environment("MI300X", "amd"))
    for m in range(3):
        make_sampled_measurement(a, 10.0, BASE, m=m)
        make_sampled_measurement(b, 12.0, FASTER, m=m)
    return a, b


def test_compare_answers_columns_rows_and_ratios(api, two_jobs):
    a, b = two_jobs
    body = api.get(f"/api/v1/compare/?jobs={a.pk},{b.pk}").json()

    assert [c["job"] for c in body["columns"]] == [a.pk, b.pk]
    assert body["columns"][0]["baseline"] is True
    assert {d["what"] for d in body["columns"][1]["differences"]} >= {"GPU vendor", "GPU model"}
    row = body["rows"][0]
    assert row["unit"] == "TFLOP/s" and row["better"] == "higher"
    assert row["cells"][0]["ratio"] is None
    ratio = row["cells"][1]["ratio"]
    assert ratio["value"] == pytest.approx(1.2)
    assert ratio["low"] < ratio["value"] < ratio["high"]
    assert row["cells"][1]["reading"] == "better"


def test_a_bad_parameter_is_a_400_naming_it(api):
    response = api.get("/api/v1/compare/?jobs=1,two")
    assert response.status_code == 400 and "jobs" in response.json()
    response = api.get("/api/v1/history/?benchmark=gemm&metric=t&fingerprint=zz")
    assert response.status_code == 400 and "fingerprint" in response.json()


def test_another_teams_job_is_a_400_like_a_missing_one(api, two_jobs):
    theirs = make_job(make_team("Other"), status=JobStatus.SUCCEEDED)
    response = api.get(f"/api/v1/compare/?jobs={two_jobs[0].pk},{theirs.pk}")
    missing = api.get(f"/api/v1/compare/?jobs={two_jobs[0].pk},999999")
    assert response.status_code == missing.status_code == 400
    assert response.json()["jobs"] == [f"no such job: {theirs.pk}"]


def test_the_endpoints_need_credentials(client, two_jobs):
    assert client.get("/api/v1/compare/?jobs=1").status_code in (401, 403)


def test_history_answers_points_and_change_points(api, team):
    env = make_environment()
    for value in [10.0] * 8:
        make_sampled_measurement(
            make_job(team, status=JobStatus.SUCCEEDED, environment=env), value, [value], m=1
        )
    body = api.get(
        "/api/v1/history/",
        {
            "benchmark": "gemm",
            "metric": "throughput",
            "case": '{"m": 1}',
            "fingerprint": env.fingerprint,
        },
    ).json()
    assert len(body["points"]) == 8 and body["change_points"] == []
    assert body["segments"] == [{"start": 0, "end": 8, "median": 10.0, "ratio": None}]


def test_the_compare_endpoint_takes_a_constant_number_of_queries(api, two_jobs, team):
    a, b = two_jobs

    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert api.get(f"/api/v1/compare/?jobs={a.pk},{b.pk}").status_code == 200
        return len(queries)

    few = count()
    for m in range(3, 100):
        make_sampled_measurement(a, 10.0, BASE, m=m)
        make_sampled_measurement(b, 12.0, FASTER, m=m)
    assert count() == few


def test_both_operations_are_in_the_schema_with_summary_description_and_example(api):
    schema = api.get("/api/schema/?format=json").json()
    for path in ("/api/v1/compare/", "/api/v1/history/"):
        operation = schema["paths"][path]["get"]
        assert operation["summary"] and len(operation["description"]) > 100
        assert operation["responses"]["200"]["content"]["application/json"]["examples"]
    parameters = {p["name"] for p in schema["paths"]["/api/v1/compare/"]["get"]["parameters"]}
    assert {"jobs", "vendor", "gpu_model", "rocm", "cuda", "library", "since"} <= parameters
