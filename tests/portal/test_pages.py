from __future__ import annotations

import pytest
from django.test import Client

from jobs import services
from jobs.choices import JobStatus, LaunchType
from jobs.models import Artifact, Job, JobEvent
from teams.choices import Role
from tests.factories import add_member, make_job, make_project, make_team, make_user


def test_pages_need_a_signed_in_user(db):
    response = Client().get("/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_signing_in_with_a_password_leads_to_the_dashboard(user):
    client = Client()
    response = client.post(
        "/accounts/login/", {"username": "alice", "password": "pw-for-tests"}, follow=True
    )
    assert response.status_code == 200 and b"Jobs" in response.content
    assert response.wsgi_request.user == user


def test_the_dashboard_lists_only_the_users_teams_jobs(member_client, team):
    ours = make_job(team, kind="probe")
    theirs = make_job(make_team(), kind="secret-kind")
    html = member_client.get("/").content.decode()
    assert f'data-job="{ours.pk}"' in html and f'data-job="{theirs.pk}"' not in html


def test_the_dashboard_polls_only_while_a_job_is_active(member_client, team):
    make_job(team, status=JobStatus.SUCCEEDED)
    assert b"every 2s" not in member_client.get("/").content
    make_job(team, status=JobStatus.RUNNING)
    assert b"every 2s" in member_client.get("/").content


def test_the_dashboard_fragment_is_served_to_htmx(member_client, team):
    make_job(team, status=JobStatus.RUNNING)
    response = member_client.get("/", HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert html.lstrip().startswith("<tbody") and "<html" not in html


def test_the_job_page_shows_log_summary_artifacts_and_environment(member_client, team):
    env = services.record_environment(
        {
            "host": {"hostname": "gpu-node-7", "cpu_model": "AMD EPYC 9654", "cpu_cores": 192},
            "gpus": [
                {
                    "index": 0,
                    "vendor": "amd",
                    "model": "AMD Instinct MI300X",
                    "arch": "gfx942",
                    "memory_bytes": 206158430208,
                    "source": "amd-smi",
                }
            ],
            "software": {"rocm_version": "6.3.1"},
            "tools": {"amd-smi": {"present": True, "version": "25.1"}},
        }
    )
    job = make_job(
        team, status=JobStatus.SUCCEEDED, kind="probe", environment=env, summary={"gpu_count": 1}
    )
    JobEvent.objects.create(job=job, kind="log", message="looking for rocminfo")
    out = services.artifact_dir(job.pk)
    out.mkdir(parents=True)
    (out / "probe.txt").write_text("raw")
    artifact = Artifact.objects.create(job=job, path="probe.txt", size=3, sha256="a" * 64)
    html = member_client.get(f"/jobs/{job.pk}/").content.decode()
    for text in (
        "gpu-node-7",
        "AMD Instinct MI300X",
        "gfx942",
        "6.3.1",
        "looking for rocminfo",
        "probe.txt",
        "gpu_count",
    ):
        assert text in html
    assert "hx-trigger" not in html  # finished: nothing polls
    download = member_client.get(f"/jobs/{job.pk}/artifacts/{artifact.pk}/")
    assert b"".join(download.streaming_content) == b"raw"


def test_a_running_jobs_page_polls_its_log_after_the_last_event(member_client, team):
    job = make_job(team, status=JobStatus.RUNNING)
    event = JobEvent.objects.create(job=job, kind="log", message="first")
    html = member_client.get(f"/jobs/{job.pk}/").content.decode()
    assert f"/jobs/{job.pk}/log/?after={event.id}" in html and "every 1s" in html
    JobEvent.objects.create(job=job, kind="log", message="second")
    fragment = member_client.get(f"/jobs/{job.pk}/log/", {"after": event.id}).content.decode()
    assert "second" in fragment and "first" not in fragment


def test_the_log_fragment_asks_for_a_reload_once_the_job_has_ended(member_client, team):
    job = make_job(team, status=JobStatus.SUCCEEDED)
    response = member_client.get(f"/jobs/{job.pk}/log/", {"after": 0})
    assert response["HX-Refresh"] == "true"


def test_another_teams_job_page_log_and_artifact_are_404(member_client):
    job = make_job(make_team(), status=JobStatus.SUCCEEDED)
    artifact = Artifact.objects.create(job=job, path="x", size=1, sha256="0" * 64)
    assert member_client.get(f"/jobs/{job.pk}/").status_code == 404
    assert member_client.get(f"/jobs/{job.pk}/log/").status_code == 404
    assert member_client.get(f"/jobs/{job.pk}/artifacts/{artifact.pk}/").status_code == 404
    assert member_client.post(f"/jobs/{job.pk}/cancel/").status_code == 404


def test_the_submit_form_creates_a_manual_job_and_opens_its_page(member_client, team, no_enqueue):
    project = make_project(team)
    response = member_client.post(
        "/jobs/new/",
        {"kind": "noop", "team": team.pk, "project": project.pk, "params": '{"seconds": 1}'},
    )
    job = Job.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/jobs/{job.pk}/"
    assert job.launch_type == LaunchType.MANUAL and job.project == project


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ("{not json", "Not valid JSON"),
        ("[1]", "must be a JSON object"),
        ('{"seconds": -1}', "seconds"),
    ],
)
def test_the_submit_form_shows_errors_and_creates_nothing(member_client, team, params, message):
    response = member_client.post("/jobs/new/", {"kind": "noop", "team": team.pk, "params": params})
    assert response.status_code == 200 and message in response.content.decode()
    assert not Job.objects.exists()


def test_cancel_from_the_page_cancels_a_queued_job(member_client, team):
    job = make_job(team, status=JobStatus.QUEUED)
    member_client.post(f"/jobs/{job.pk}/cancel/")
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELED


def test_a_viewer_sees_jobs_but_cannot_cancel_them(team):
    viewer = make_user()
    add_member(team, viewer, Role.VIEWER)
    client = Client()
    client.force_login(viewer)
    job = make_job(team, status=JobStatus.QUEUED)
    assert client.get(f"/jobs/{job.pk}/").status_code == 200
    client.post(f"/jobs/{job.pk}/cancel/")
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED


def test_a_project_can_be_created_from_the_projects_page(member_client, team):
    response = member_client.post(
        "/projects/",
        {
            "team": team.pk,
            "name": "cfd-solver",
            "current_platform": "8x H100",
            "target_gpus": "MI300X, gfx942",
        },
    )
    project = team.projects.get()
    assert response.status_code == 302 and response["Location"] == f"/projects/{project.pk}/"
    assert project.target_gpus == ["MI300X", "gfx942"]
    assert "cfd-solver" in member_client.get("/projects/").content.decode()


def test_a_member_of_one_team_finds_it_chosen_in_the_team_selects(member_client, team):
    import re

    for page in ("/projects/", "/jobs/new/"):
        html = member_client.get(page).content.decode()
        select = re.search(r'<select name="team"[^>]*>(.*?)</select>', html, re.S).group(1)
        assert "---------" not in select, page
        assert re.search(rf'<option value="{team.pk}" selected>', select), (page, select)


def test_every_model_has_an_admin_page(team):
    from django.apps import apps
    from django.contrib import admin

    models = [m for app in ("jobs", "portal") for m in apps.get_app_config(app).get_models()]
    assert {Job, JobEvent, Artifact} <= set(models)  # the apps' models are really listed
    for model in models:
        assert admin.site.is_registered(model), model


def test_a_user_makes_and_replaces_an_api_token_that_the_api_accepts(member_client, user):
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    assert b"no API token yet" in member_client.get("/account/token/").content
    member_client.post("/account/token/")
    first = Token.objects.get(user=user).key
    assert first in member_client.get("/account/token/").content.decode()
    member_client.post("/account/token/")
    second = Token.objects.get(user=user).key
    assert second != first
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {first}")
    assert client.get("/api/v1/jobs/").status_code == 401
    client.credentials(HTTP_AUTHORIZATION=f"Token {second}")
    assert client.get("/api/v1/jobs/").status_code == 200


def test_admin_pages_of_every_model_render_for_staff(team):
    from django.apps import apps
    from django.contrib.auth import get_user_model

    from teams.models import SourceSnapshot

    admin_user = get_user_model().objects.create_superuser("root", password="pw")
    job = make_job(team, status=JobStatus.SUCCEEDED)
    snapshot = SourceSnapshot.objects.create(
        project=make_project(team), origin=SourceSnapshot.Origin.GIT, name="https://x/r"
    )
    client = Client()
    client.force_login(admin_user)
    for app in ("jobs", "portal"):
        for model in apps.get_app_config(app).get_models():
            path = f"{app}/{model._meta.model_name}"
            assert client.get(f"/admin/{path}/").status_code == 200, path
    assert client.get(f"/admin/jobs/job/{job.pk}/change/").status_code == 200
    assert client.get(f"/admin/portal/sourcesnapshot/{snapshot.pk}/change/").status_code == 200


@pytest.mark.process
def test_a_member_uploads_an_archive_from_the_project_page(member_client, team):
    import io
    import zipfile

    from django.core.files.uploadedfile import SimpleUploadedFile

    from teams.sources import extract_upload

    project = make_project(team, "cfd")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("k.cu", "__global__ void k() {}\n")
    upload = SimpleUploadedFile("code.zip", buffer.getvalue())
    response = member_client.post(f"/projects/{project.pk}/", {"archive": upload}, follow=True)
    page = response.content.decode()
    assert "1 files checked; a worker is extracting them" in page and "Extracting…" in page
    assert 'hx-trigger="every 2s"' in page  # the page follows the source until it is ready
    extract_upload(project.sources.get().pk)  # what the worker does after the commit
    assert project.sources.get().status == "ready"
    assert (
        'hx-trigger="every 2s"'
        not in member_client.get(f"/projects/{project.pk}/").content.decode()
    )
    evil = io.BytesIO()
    with zipfile.ZipFile(evil, "w") as archive:
        archive.writestr("../evil.cu", "x")
    response = member_client.post(
        f"/projects/{project.pk}/",
        {"archive": SimpleUploadedFile("evil.zip", evil.getvalue())},
        follow=True,
    )
    assert "Refused" in response.content.decode() and "../evil.cu" in response.content.decode()
    assert project.sources.count() == 1


def test_a_blas_bench_page_shows_the_claims_check_and_what_was_not_measured(member_client, team):
    summary = {
        "claims": [
            {
                "text": "BF16 is about 2x as fast as FP32",
                "backend": "torch",
                "quoted": 2.0,
                "vendor_peak_ratio": 14.789,
                "measured": 13.223,
                "size": 8192,
                "verdict": "better than quoted",
                "why_missing": None,
            },
            {
                "text": "FP8 is about 2x as fast as BF16",
                "backend": "numpy",
                "quoted": 2.0,
                "vendor_peak_ratio": None,
                "measured": None,
                "size": None,
                "verdict": None,
                "why_missing": "no square FP8 GEMM measured on numpy",
            },
        ],
        "unsupported": [
            {
                "backend": "numpy",
                "family": "gemm",
                "precision": "bf16",
                "op": None,
                "reason": "numpy has no bfloat16",
            }
        ],
        "flags": {"high_cv": ["torch gemm tf32 1024: CV 6.69 %"], "failed_checks": []},
    }
    job = make_job(team, kind="blas-bench", status=JobStatus.SUCCEEDED, summary=summary)
    html = member_client.get(f"/jobs/{job.pk}/").content.decode()
    assert "BF16 is about 2x as fast as FP32" in html and "13.223" in html
    assert "better than quoted" in html and "no square FP8 GEMM measured" in html
    assert "numpy has no bfloat16" in html and "CV 6.69 %" in html


def test_phase_statuses_read_as_words_on_the_project_and_roadmap_pages(member_client, team):
    from tests.factories import make_project

    project = make_project(team, "cfd")
    for page in (f"/projects/{project.pk}/", f"/projects/{project.pk}/roadmap/"):
        html = member_client.get(page).content.decode()
        assert "Not started" in html and "notstarted" not in html, page


@pytest.mark.process  # the steps ask this host's hipcc which targets it knows
def test_a_source_ready_between_the_pages_reads_is_followed_until_the_steps_show(
    member_client, team, monkeypatch
):
    """The worker may finish extracting while the page is being built: the page then
    either shows the steps or keeps polling, never a ready source with neither."""
    from portal import views
    from teams.models import SourceSnapshot
    from teams.sources import newest_ready

    project = make_project(team, "cfd")
    source = SourceSnapshot.objects.create(
        project=project, origin=SourceSnapshot.Origin.UPLOAD, name="code.zip"
    )

    def worker_finishes_right_after(p):
        found = newest_ready(p)
        SourceSnapshot.objects.filter(pk=source.pk).update(status=SourceSnapshot.Status.READY)
        return found

    monkeypatch.setattr(views, "newest_ready", worker_finishes_right_after)
    page = member_client.get(f"/projects/{project.pk}/").content.decode()
    assert 'data-step="hipify-scan"' in page or 'hx-trigger="every 2s"' in page
    monkeypatch.undo()
    again = member_client.get(f"/projects/{project.pk}/").content.decode()
    assert 'data-step="hipify-scan"' in again
