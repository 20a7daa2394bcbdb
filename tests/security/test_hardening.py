"""What the web layer refuses or bounds: CSP, external assets, deep and huge JSON, hardware,
and environments that one team's job cannot rewrite under another's."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client
from rest_framework.test import APIClient

from jobs import services
from jobs.choices import JobStatus
from jobs.models import Environment, JobEvent
from teams.choices import Role
from tests.factories import (
    MI300X,
    add_member,
    make_job,
    make_measurement,
    make_project,
    make_team,
    make_user,
    make_worker,
)


def _pages(team) -> list[str]:
    project = make_project(team, "ported")
    job = make_job(team, kind="blas-bench", status=JobStatus.RUNNING, project=project)
    JobEvent.objects.create(job=job, kind="log", message="hello")
    for size, value in ((1024, 10.0), (2048, 20.0)):
        make_measurement(job, value, m=size, n=size, k=size, backend="numpy", precision="fp32")
    return [
        "/",
        "/jobs/new/",
        f"/jobs/{job.pk}/",
        f"/jobs/{job.pk}/log/?after=0",
        "/projects/",
        f"/projects/{project.pk}/",
        f"/projects/{project.pk}/porting/",
        "/account/token/",
        "/api/docs/",
        "/api/v1/jobs/",
    ]


def _policy(response) -> dict[str, list[str]]:
    header = response["Content-Security-Policy"]
    directives = {}
    for part in header.split(";"):
        name, *values = part.split()
        directives[name] = values
    return directives


# --- CSP --------------------------------------------------------------------------
def test_every_page_carries_a_strict_content_security_policy(member_client, team):
    pages = [*_pages(team), "/accounts/login/"]
    for path in pages:
        response = member_client.get(path)
        assert response.status_code == 200, path
        policy = _policy(response)
        assert policy["default-src"] == ["'self'"], path
        assert policy["script-src"] == ["'self'"], path
        assert "'unsafe-inline'" not in policy.get("style-src", []), path
        assert policy["img-src"] == ["'self'", "data:"], path
        assert policy["object-src"] == ["'none'"], path
        assert policy["frame-ancestors"] == ["'none'"], path
        assert policy["base-uri"] == ["'self'"], path
        assert policy["form-action"] == ["'self'"], path


def test_the_anonymous_sign_in_page_carries_the_policy(db):
    response = Client().get("/accounts/login/")
    assert _policy(response)["script-src"] == ["'self'"]


_INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>", re.I)
_HANDLER = re.compile(r"""<[^>]+\son[a-z]+\s*=""", re.I)
_STYLE_ATTR = re.compile(r"""<[^>]+\sstyle\s*=""", re.I)
_STYLE_TAG = re.compile(r"<style(?![^>]*\bnonce=)[^>]*>", re.I)


def test_pages_have_no_inline_script_handler_or_style_the_policy_would_block(member_client, team):
    for path in _pages(team):
        html = member_client.get(path).content.decode()
        assert not _INLINE_SCRIPT.search(html), (path, _INLINE_SCRIPT.search(html))
        assert not _HANDLER.search(html), (path, _HANDLER.search(html))
        assert not _STYLE_ATTR.search(html), (path, _STYLE_ATTR.search(html))
        assert not _STYLE_TAG.search(html), (path, _STYLE_TAG.search(html))


def test_a_charts_style_carries_the_pages_nonce(member_client, team):
    path = next(p for p in _pages(team) if re.fullmatch(r"/jobs/\d+/", p))
    response = member_client.get(path)
    html = response.content.decode()
    nonces = re.findall(r'<style nonce="([^"]+)"', html)
    assert nonces and f"'nonce-{nonces[0]}'" in _policy(response)["style-src"]


_EXTERNAL = re.compile(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", re.I)


def test_the_api_docs_load_nothing_from_another_host(member_client):
    for path in ("/api/docs/", "/api/docs/?script=", "/api/redoc/"):
        response = member_client.get(path, follow=True)
        assert response.status_code == 200, path
        body = response.content.decode()
        assert not _EXTERNAL.search(body), (path, _EXTERNAL.search(body))
        assert "fonts.googleapis.com" not in body and "cdn." not in body, path


# --- JSON depth and size ----------------------------------------------------------
DEEP = "[" * 100_000 + "]" * 100_000


def test_a_100000_deep_json_body_is_a_400_on_the_api(api):
    response = api.post("/api/v1/jobs/", DEEP, content_type="application/json")
    assert response.status_code == 400
    assert "deep" in response.json()["detail"].lower()


def test_json_nested_past_the_depth_limit_is_a_400_on_the_api(api, settings):
    nested: object = 1
    for _ in range(settings.ROCPATH_JSON_MAX_DEPTH + 1):
        nested = {"a": nested}
    body = json.dumps({"kind": "noop", "params": nested})
    response = api.post("/api/v1/jobs/", body, content_type="application/json")
    assert response.status_code == 400 and "deep" in response.json()["detail"].lower()


def test_a_json_body_past_the_size_limit_is_a_400(api, settings):
    body = json.dumps({"kind": "noop", "params": {"x": "a" * settings.ROCPATH_JSON_MAX_BYTES}})
    response = api.post("/api/v1/jobs/", body, content_type="application/json")
    assert response.status_code == 400 and "bytes" in response.json()["detail"]


def test_a_100000_deep_json_in_the_submit_form_is_a_form_error(member_client, team):
    response = member_client.post("/jobs/new/", {"kind": "noop", "team": team.pk, "params": DEEP})
    assert response.status_code == 200
    assert "deep" in response.content.decode().lower()


def test_a_1_5_mb_bad_request_gets_a_small_error(api):
    value = {"kind": "noop", "params": {"seconds": "x" * 1_500_000}}
    response = api.post("/api/v1/jobs/", value, format="json")
    assert response.status_code == 400 and len(response.content) < 20_000


def test_thousands_of_bad_fields_get_a_bounded_error(api):
    params = {f"unknown-field-{n:06d}-{'y' * 20}": n for n in range(20_000)}
    response = api.post("/api/v1/jobs/", {"kind": "noop", "params": params}, format="json")
    assert response.status_code == 400
    assert len(response.content) < 20_000
    assert "more" in response.content.decode()  # it says that it left some out


def test_a_form_with_a_huge_bad_value_gets_a_small_error(member_client, team):
    params = json.dumps({"seconds": "x" * 1_000_000})
    response = member_client.post("/jobs/new/", {"kind": "noop", "team": team.pk, "params": params})
    assert response.status_code == 200
    assert len(response.content) < 1_000_000 + 60_000  # the textarea echoes the input once


# --- hardware ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("hardware", "field"),
    [
        ({"gpu_indices": ["a", -3]}, "gpu_indices"),
        ({"gpu_indices": [0, 0]}, "gpu_indices"),
        ({"gpu_indices": list(range(1000))}, "gpu_indices"),
        ({"gpu_indices": [True]}, "gpu_indices"),
        ({"gpu_count": True}, "gpu_count"),
        ({"gpu_count": 10**9}, "gpu_count"),
        ({"memory_mb": "lots"}, "memory_mb"),
        ({"memory_mb": 10**15}, "memory_mb"),
        ({"cpus": 0}, "cpus"),
        ({"cpus": False}, "cpus"),
        ({"pids": -1}, "pids"),
        ({"queue": "../../etc"}, "queue"),
        ({"queue": "q" * 200}, "queue"),
        ({"queue": 7}, "queue"),
        ({"gpu_vendor": "intel"}, "gpu_vendor"),
        ({"gpu_model": ""}, "gpu_model"),
        ({"gpu_model": "x" * 500}, "gpu_model"),
        ({"gpu_arch": "GFX942; rm"}, "gpu_arch"),
        ({"gpu_arch": 942}, "gpu_arch"),
        ({"gpu_memory_gb": "192"}, "gpu_memory_gb"),
        ({"gpu_memory_gb": -1}, "gpu_memory_gb"),
        ({"bogus": 1}, "bogus"),
    ],
)
def test_bad_hardware_is_a_400_naming_the_field(api, no_enqueue, hardware, field):
    response = api.post("/api/v1/jobs/", {"kind": "noop", "hardware": hardware}, format="json")
    assert response.status_code == 400, response.content
    messages = response.json()["hardware"]
    assert any(m.startswith(f"{field}:") for m in messages), messages


def test_good_hardware_is_accepted(api, no_enqueue, settings):
    settings.ROCPATH_JOB_QUEUES = {"*": ["gpu-mi300x"]}  # a queue the operator opened
    # ... and that a live worker with two MI300X consumes
    make_worker(gpus=[MI300X, MI300X], queues=[settings.CELERY_TASK_DEFAULT_QUEUE, "gpu-mi300x"])
    hardware = {
        "gpu_vendor": "amd",
        "gpu_model": "mi300x",
        "gpu_arch": "gfx942",
        "gpu_memory_gb": 180,
        "gpu_indices": [0, 1],
        "memory_mb": 4096,
        "cpus": 1.5,
        "pids": 256,
        "queue": "gpu-mi300x",
    }
    response = api.post("/api/v1/jobs/", {"kind": "noop", "hardware": hardware}, format="json")
    assert response.status_code == 201, response.content


def test_a_stored_job_with_bad_gpu_indices_errors_with_a_message_not_a_crash():
    from jobs.executors.gpu_profiles import GpuUnavailable, request_for

    inventory = {"gpus": [{"vendor": "amd"}]}
    with pytest.raises(GpuUnavailable, match="gpu_indices"):
        request_for({"gpu_indices": ["a", -3]}, inventory, None)


# --- environments -----------------------------------------------------------------
def _fingerprint(note: str) -> dict:
    return {
        "host": {"hostname": "shared-node", "cpu_model": "EPYC", "cpu_cores": 8},
        "gpus": [],
        "software": {"rocm_version": "6.3.1"},
        "tools": {"rocminfo": {"present": False, "error": note}},
    }


def test_another_teams_job_does_not_rewrite_this_teams_environment(team):
    ours = make_job(team, status=JobStatus.SUCCEEDED)
    ours_env = services.record_environment(_fingerprint("ours"))
    ours.environment = ours_env
    ours.save()
    theirs_env = services.record_environment(_fingerprint("theirs: /secret/path"))
    make_job(make_team(), status=JobStatus.SUCCEEDED, environment=theirs_env)
    ours.refresh_from_db()
    assert ours.environment.data["tools"]["rocminfo"]["error"] == "ours"
    assert theirs_env.pk != ours_env.pk


def test_an_identical_fingerprint_reuses_its_row_and_never_changes_it(team):
    first = services.record_environment(_fingerprint("same"))
    before = Environment.objects.filter(pk=first.pk).values().get()
    again = services.record_environment(_fingerprint("same"))
    assert again.pk == first.pk and Environment.objects.count() == 1
    assert Environment.objects.filter(pk=first.pk).values().get() == before


def test_environments_of_the_same_machine_still_compare_like_for_like(team):
    a = services.record_environment(_fingerprint("one run"))
    b = services.record_environment(_fingerprint("another run"))
    assert a.pk != b.pk and a.fingerprint == b.fingerprint


def test_the_api_shows_a_team_only_the_environment_its_own_job_produced(api, team):
    theirs_team = make_team()
    theirs = services.record_environment(_fingerprint("theirs"))
    make_job(theirs_team, status=JobStatus.SUCCEEDED, environment=theirs)
    ours = services.record_environment(_fingerprint("ours"))
    make_job(team, status=JobStatus.SUCCEEDED, environment=ours)
    rows = api.get("/api/v1/environments/").json()["results"]
    assert [r["data"]["tools"]["rocminfo"]["error"] for r in rows] == ["ours"]
    outsider = make_user()
    add_member(theirs_team, outsider, Role.MEMBER)
    client = APIClient()
    client.force_authenticate(outsider)
    rows = client.get("/api/v1/environments/").json()["results"]
    assert [r["data"]["tools"]["rocminfo"]["error"] for r in rows] == ["theirs"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_the_migration_hashes_existing_environments_and_merges_identical_ones():
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before, after = [("jobs", "0004_gpu_lease")], [("jobs", "0006_environment_data_sha256_unique")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    Env, Job, Team = (
        old.get_model(*m) for m in (("jobs", "Environment"), ("jobs", "Job"), ("portal", "Team"))
    )
    team = Team.objects.create(name="Old", slug="old")
    data = _fingerprint("old run")
    kept = Env.objects.create(fingerprint="a" * 64, data=data)
    twin = Env.objects.create(fingerprint="b" * 64, data=data)  # same data, written by hand
    other = Env.objects.create(fingerprint="c" * 64, data=_fingerprint("another"))
    job = Job.objects.create(kind="noop", team=team, timeout_s=60, environment=twin)

    executor = MigrationExecutor(connection)
    executor.migrate(after)
    new = executor.loader.project_state(after).apps
    Env, Job = new.get_model("jobs", "Environment"), new.get_model("jobs", "Job")
    assert set(Env.objects.values_list("pk", flat=True)) == {kept.pk, other.pk}
    assert Job.objects.get(pk=job.pk).environment_id == kept.pk
    assert Env.objects.get(pk=kept.pk).data_sha256 == services.environment_digest(data)
    MigrationExecutor(connection).migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
