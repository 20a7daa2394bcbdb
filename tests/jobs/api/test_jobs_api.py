from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from jobs import services
from jobs.choices import JobStatus, LaunchType
from jobs.models import Artifact, Job, JobEvent
from teams.choices import Role
from tests.factories import add_member, make_job, make_project, make_team, make_user

URL = "/api/v1/jobs/"


def test_submitting_a_job_answers_201_with_its_location(
    api, team, no_enqueue, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(URL, {"kind": "noop", "params": {"seconds": 0}}, format="json")
    assert response.status_code == 201, response.content
    job = Job.objects.get()
    assert response["Location"] == f"/api/v1/jobs/{job.pk}/"
    assert response.json()["status"] == JobStatus.PENDING
    assert job.launch_type == LaunchType.API
    assert job.params["seconds"] == 0 and "steps" in job.params  # defaults filled in
    assert no_enqueue == [job.pk]


def test_a_job_is_not_queued_before_its_transaction_commits(api, team, no_enqueue):
    response = api.post(URL, {"kind": "noop"}, format="json")
    assert response.status_code == 201
    assert no_enqueue == []  # the test transaction never committed


def test_an_unknown_kind_is_a_400_naming_the_field(api, team):
    response = api.post(URL, {"kind": "mine-bitcoin"}, format="json")
    assert response.status_code == 400
    assert "kind" in response.json()
    assert "Unknown job kind" in response.json()["kind"][0]


def test_params_that_fail_the_kinds_schema_are_a_400_with_field_errors(api, team):
    response = api.post(
        URL, {"kind": "noop", "params": {"seconds": "soon", "bogus": 1}}, format="json"
    )
    assert response.status_code == 400
    messages = " ".join(response.json()["params"])
    assert "seconds" in messages and "bogus" in messages


@pytest.mark.parametrize(
    "body",
    [
        {"kind": "noop", "params": [1, 2]},
        {"kind": "noop", "timeout_s": "ten"},
        {"kind": "noop", "hardware": "mi300x"},
        {"kind": 12, "params": "x"},
        {},
    ],
)
def test_wrong_types_are_a_400_never_a_500(api, team, body):
    response = api.post(URL, body, format="json")
    assert response.status_code == 400


def test_a_malformed_json_body_is_a_400(api, team):
    response = api.post(URL, data="{not json", content_type="application/json")
    assert response.status_code == 400


def test_a_timeout_above_the_server_cap_is_refused(api, team, settings):
    settings.ROCPATH_JOB_TIMEOUT_MAX_S = 100
    response = api.post(URL, {"kind": "noop", "timeout_s": 101}, format="json")
    assert response.status_code == 400 and "timeout_s" in response.json()


def test_a_viewer_cannot_submit(team):
    viewer = make_user()
    add_member(team, viewer, Role.VIEWER)
    client = APIClient()
    client.force_authenticate(viewer)
    response = client.post(URL, {"kind": "noop", "team": team.slug}, format="json")
    assert response.status_code == 400
    assert "team" in response.json()


def test_submitting_to_another_teams_project_is_refused(api, team):
    other = make_project(make_team())
    response = api.post(URL, {"kind": "noop", "project": other.pk}, format="json")
    assert response.status_code == 400 and "project" in response.json()


def test_anonymous_requests_are_refused(db):
    assert APIClient().get(URL).status_code in (401, 403)


def test_token_authentication_works(user, team):
    from rest_framework.authtoken.models import Token

    token = Token.objects.create(user=user)
    make_job(team)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    response = client.get(URL)
    assert response.status_code == 200 and response.json()["count"] == 1


def test_the_list_is_paginated_and_filtered(api, team):
    project = make_project(team)
    for _ in range(3):
        make_job(team, status=JobStatus.SUCCEEDED)
    make_job(team, status=JobStatus.FAILED, kind="probe", project=project)
    body = api.get(URL).json()
    assert body["count"] == 4 and "next" in body and "results" in body
    assert api.get(URL, {"status": "failed"}).json()["count"] == 1
    assert api.get(URL, {"status": "failed,succeeded"}).json()["count"] == 4
    assert api.get(URL, {"kind": "probe"}).json()["count"] == 1
    assert api.get(URL, {"project": project.pk}).json()["count"] == 1


def test_an_unknown_status_filter_is_a_400(api, team):
    assert api.get(URL, {"status": "exploded"}).status_code == 400


def test_listing_costs_the_same_number_of_queries_for_1_or_20_jobs(api, team):
    make_job(team)
    with CaptureQueriesContext(connection) as one:
        api.get(URL)
    for _ in range(19):
        make_job(team, project=make_project(team))
    with CaptureQueriesContext(connection) as twenty:
        assert api.get(URL).json()["count"] == 20
    assert len(one) == len(twenty)


def test_a_user_of_team_a_gets_404_for_team_bs_job_events_and_artifacts(api, team, tmp_path):
    other_team = make_team()
    job = make_job(other_team, status=JobStatus.SUCCEEDED)
    out = services.artifact_dir(job.pk)
    out.mkdir(parents=True)
    (out / "secret.txt").write_text("theirs")
    artifact = Artifact.objects.create(job=job, path="secret.txt", size=6, sha256="0" * 64)
    assert api.get(f"{URL}{job.pk}/").status_code == 404
    assert api.get(f"{URL}{job.pk}/events/").status_code == 404
    assert api.get(f"{URL}{job.pk}/artifacts/").status_code == 404
    assert api.get(f"{URL}{job.pk}/measurements/").status_code == 404
    assert api.get(f"{URL}{job.pk}/artifacts/{artifact.pk}/download/").status_code == 404
    assert api.post(f"{URL}{job.pk}/cancel/").status_code == 404
    assert api.get(URL).json()["count"] == 0


def test_events_are_read_after_a_cursor(api, team):
    job = make_job(team, status=JobStatus.RUNNING)
    first = JobEvent.objects.create(job=job, kind="log", message="one")
    JobEvent.objects.create(job=job, kind="progress", pct=50, message="half")
    body = api.get(f"{URL}{job.pk}/events/", {"after": first.id}).json()
    assert [e["message"] for e in body["events"]] == ["half"]
    assert body["next_cursor"] == body["events"][-1]["id"]
    assert body["active"] is True
    again = api.get(f"{URL}{job.pk}/events/", {"after": body["next_cursor"]}).json()
    assert again["events"] == [] and again["next_cursor"] == body["next_cursor"]


def test_an_artifact_downloads_with_its_bytes(api, team):
    job = make_job(team, status=JobStatus.SUCCEEDED)
    out = services.artifact_dir(job.pk)
    out.mkdir(parents=True)
    (out / "report.md").write_text("# hello")
    artifact = Artifact.objects.create(
        job=job, path="report.md", size=7, sha256="x" * 64, content_type="text/markdown"
    )
    listing = api.get(f"{URL}{job.pk}/artifacts/").json()
    assert listing["results"][0]["download"].endswith(f"/artifacts/{artifact.pk}/download/")
    response = api.get(listing["results"][0]["download"])
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b"# hello"


def test_an_artifact_path_cannot_escape_the_jobs_folder(api, team, settings):
    job = make_job(team, status=JobStatus.SUCCEEDED)
    Path(settings.ARTIFACT_ROOT, "outside.txt").write_text("no")
    artifact = Artifact.objects.create(
        job=job, path="../../../outside.txt", size=2, sha256="0" * 64
    )
    assert api.get(f"{URL}{job.pk}/artifacts/{artifact.pk}/download/").status_code == 404


def test_canceling_a_queued_job_ends_it_at_once(api, team):
    job = make_job(team, status=JobStatus.QUEUED)
    response = api.post(f"{URL}{job.pk}/cancel/")
    assert response.status_code == 202
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELED and "alice" in job.error


def test_canceling_a_running_job_asks_its_worker(api, team):
    job = make_job(team, status=JobStatus.RUNNING)
    assert api.post(f"{URL}{job.pk}/cancel/").status_code == 202
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING and job.cancel_requested_at is not None


def test_canceling_a_finished_job_is_a_409(api, team):
    job = make_job(team, status=JobStatus.SUCCEEDED)
    assert api.post(f"{URL}{job.pk}/cancel/").status_code == 409


def test_a_viewer_cannot_cancel(team):
    viewer = make_user()
    add_member(team, viewer, Role.VIEWER)
    client = APIClient()
    client.force_authenticate(viewer)
    job = make_job(team, status=JobStatus.QUEUED)
    assert client.post(f"{URL}{job.pk}/cancel/").status_code == 403


def test_rerun_creates_a_new_job_pointing_at_the_original(api, team, no_enqueue):
    job = make_job(team, status=JobStatus.FAILED, params={"seconds": 1})
    response = api.post(f"{URL}{job.pk}/rerun/")
    assert response.status_code == 201
    rerun = Job.objects.get(pk=response.json()["id"])
    assert rerun.rerun_of_id == job.pk and rerun.launch_type == LaunchType.RERUN


def test_kinds_are_listed_with_their_params_schema(api):
    kinds = {k["name"]: k for k in api.get("/api/v1/kinds/").json()}
    assert {"probe", "noop"} <= set(kinds)
    assert kinds["noop"]["params_schema"]["type"] == "object"


def test_projects_and_environments_are_scoped_to_the_users_teams(api, team):
    make_project(team, "ours")
    make_project(make_team(), "theirs")
    names = [p["name"] for p in api.get("/api/v1/projects/").json()["results"]]
    assert names == ["ours"]
    theirs = services.record_environment({"host": {"hostname": "theirs"}})
    make_job(make_team(), status=JobStatus.SUCCEEDED, environment=theirs)
    ours = services.record_environment({"host": {"hostname": "ours"}})
    make_job(team, status=JobStatus.SUCCEEDED, environment=ours)
    hosts = [e["hostname"] for e in api.get("/api/v1/environments/").json()["results"]]
    assert hosts == ["ours"]


def test_the_openapi_schema_and_docs_are_served(api):
    schema = api.get("/api/schema/")
    assert schema.status_code == 200 and b"/api/v1/jobs/" in schema.content
    docs = api.get("/api/docs/")
    assert docs.status_code == 200 and b"swagger" in docs.content.lower()


@pytest.mark.parametrize(
    ("hardware", "words"),
    [
        ({"gpus": 8}, "unknown field"),
        ({"memory_mb": "lots"}, "memory_mb: must be int"),
        ({"pids": -1}, "must not be negative"),
        ({"gpu_vendor": "intel", "gpu_count": 1}, "gpu_vendor: must be amd or nvidia"),
    ],
)
def test_hardware_requests_are_validated(api, team, hardware, words):
    response = api.post(URL, {"kind": "noop", "hardware": hardware}, format="json")
    assert response.status_code == 400
    assert words in " ".join(response.json()["hardware"])


def test_a_job_may_only_name_an_image_from_the_allowed_prefixes(api, team, no_enqueue):
    refused = api.post(URL, {"kind": "noop", "image": "evil/miner:latest"}, format="json")
    assert refused.status_code == 400 and "image" in refused.json()
    accepted = api.post(URL, {"kind": "noop", "image": "rocpath/debian-blas:latest"}, format="json")
    assert accepted.status_code == 201 and accepted.json()["image"] == "rocpath/debian-blas:latest"


def test_a_job_gets_the_image_configured_for_its_kind(api, team, settings, no_enqueue):
    settings.ROCPATH_KIND_IMAGES = {"probe": "rocpath/rocm:6.4"}
    assert api.post(URL, {"kind": "probe"}, format="json").json()["image"] == "rocpath/rocm:6.4"
    assert api.post(URL, {"kind": "noop"}, format="json").json()["image"] == settings.ROCPATH_IMAGE
