"""Baselines and verdicts over REST: pinned, listed, refused with the field named."""

from __future__ import annotations

import pytest

from results import services
from results.models import Baseline
from tests.factories import make_project, make_team
from tests.results.helpers import environment, sampled_job

pytestmark = pytest.mark.django_db


@pytest.fixture
def scope(team):
    return make_project(team), environment("box-1")


def test_posting_a_job_pins_it_for_every_benchmark_it_measured(api, team, scope):
    job = sampled_job(team, *scope)
    response = api.post("/api/v1/baselines/", {"job": job.pk}, format="json")
    assert response.status_code == 201
    assert [(b["job"], b["benchmark"]) for b in response.json()] == [(job.pk, "gemm")]
    assert api.get("/api/v1/baselines/").json()["results"][0]["job"] == job.pk


@pytest.mark.parametrize(
    ("body", "field"),
    [({}, "job"), ({"job": "x"}, "job"), ({"job": 999999}, "job")],
)
def test_a_bad_pin_is_a_400_naming_the_field(api, body, field):
    response = api.post("/api/v1/baselines/", body, format="json")
    assert response.status_code == 400 and field in response.json()


def test_a_benchmark_the_job_lacks_is_a_400_naming_benchmark(api, team, scope):
    job = sampled_job(team, *scope)
    response = api.post("/api/v1/baselines/", {"job": job.pk, "benchmark": "fft"}, format="json")
    assert response.status_code == 400 and "benchmark" in response.json()


def test_another_teams_job_cannot_be_pinned(api, scope):
    other = make_team("Other")
    job = sampled_job(other, make_project(other), scope[1])
    assert api.post("/api/v1/baselines/", {"job": job.pk}, format="json").status_code == 400
    assert not Baseline.objects.exists()


def test_deleting_a_baseline_unpins_it(api, team, scope):
    [baseline] = services.pin_baseline(sampled_job(team, *scope))
    assert api.delete(f"/api/v1/baselines/{baseline.pk}/").status_code == 204
    assert not Baseline.objects.exists()


def test_open_regressions_are_listed_and_acknowledged(api, team, scope):
    services.pin_baseline(sampled_job(team, *scope, seed=1))
    slow = sampled_job(team, *scope, level=85.0, seed=2)
    services.compare_job(slow.pk)
    listed = api.get("/api/v1/verdicts/?open=true").json()["results"]
    assert {(v["job"], v["verdict"]) for v in listed} == {(slow.pk, "regressed")}
    assert all(v["ratio_low"] < v["ratio"] < v["ratio_high"] for v in listed)
    acked = api.post("/api/v1/verdicts/acknowledge/", {"job": slow.pk}, format="json")
    assert acked.json() == {"acknowledged": 2}
    assert api.get("/api/v1/verdicts/?open=true").json()["results"] == []


def test_an_unknown_verdict_filter_is_a_400_naming_it(api):
    response = api.get("/api/v1/verdicts/?verdict=worse")
    assert response.status_code == 400 and "verdict" in response.json()


def test_the_endpoints_are_in_the_openapi_schema(api):
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/json").content.decode()
    assert "/api/v1/baselines/" in schema and "/api/v1/verdicts/acknowledge/" in schema
