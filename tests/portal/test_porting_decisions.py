"""The team acts on the report: decisions per API group, scan settings, compile status."""

from __future__ import annotations

import html
import re

import pytest
from django.test import Client
from django.utils import timezone

from jobs.choices import JobStatus
from jobs.models import Job
from teams.models import ApiDecision
from tests.factories import add_member, make_job, make_project, make_user
from tests.portal.test_porting import CUDA, _scan, _upload, needs_hipify

# The API HIP lacks twice: a typedef and its tag are one decision.
TWINS = CUDA + "CUctx_flags a;\nCUctx_flags_enum b;\n"


@needs_hipify
@pytest.mark.process
def test_a_decision_per_api_group_is_recorded_shown_and_kept_across_scans(user, team):
    project = make_project(team, "solver")
    _upload(project, user, TWINS)
    _scan(user, project)
    client = Client()
    client.force_login(user)
    api = f"/api/v1/projects/{project.pk}/porting-report/"
    report = client.get(api).json()
    groups = {g["api"]: g for g in report["api_groups"]}
    assert set(groups["CUctx_flags"]["members"]) == {"CUctx_flags", "CUctx_flags_enum"}
    assert report["decisions"]["open"] == len(
        [g for g in report["api_groups"] if g["state"] == "open"]
    )
    opened = report["decisions"]["open"]
    assert opened >= 2 and not report["decisions"]["all_decided"]

    page = f"/projects/{project.pk}/porting/decisions/"
    response = client.post(
        page, {"api": "CUctx_flags", "decision": "stub", "note": "context flags are unused"}
    )
    assert response.status_code == 302 and response["Location"].endswith("#api-groups")
    # A library replacement must say which call; the page says what is missing.
    refused = client.post(
        page, {"api": "cudaGraphExecNodeSetParams", "decision": "library"}, follow=True
    ).content.decode()
    assert "Not recorded: replacement: say which library call replaces it" in refused
    rest = client.post(
        f"/api/v1/projects/{project.pk}/api-decisions/",
        {"api": "cudaGraphExecNodeSetParams", "decision": "library"},
        content_type="application/json",
    )
    assert rest.status_code == 400 and "replacement" in rest.json()
    rest = client.post(
        f"/api/v1/projects/{project.pk}/api-decisions/",
        {
            "api": "cudaGraphExecNodeSetParams",
            "decision": "library",
            "replacement": "hipGraphExecKernelNodeSetParams",
        },
        content_type="application/json",
    )
    assert rest.status_code == 200 and rest.json()["decided_by"] == user.username
    assert client.post(
        f"/api/v1/projects/{project.pk}/api-decisions/",
        {"api": "x", "decision": "maybe"},
        content_type="application/json",
    ).json() == {"decision": ["'maybe' is not one of port, library, stub, drop, wontfix"]}

    # A re-scan of the next version keeps the decisions: they are kept by API name.
    _upload(project, user, TWINS + "// more code\n")
    _scan(user, project)
    report = client.get(api).json()
    groups = {g["api"]: g for g in report["api_groups"]}
    assert groups["CUctx_flags"]["decision"]["label"] == "Stub it out"
    assert groups["cudaGraphExecNodeSetParams"]["decision"]["replacement"] == (
        "hipGraphExecKernelNodeSetParams"
    )
    assert report["decisions"]["decided"] == 2 and report["decisions"]["open"] == opened - 2
    html = client.get(f"/projects/{project.pk}/porting/").content.decode()
    assert "context flags are unused" in html and f"{opened - 2} open, 2 decided" in html
    assert ApiDecision.objects.filter(project=project).count() == 2
    # Reopened: the group is open again and its decision gone.
    client.post(page, {"api": "CUctx_flags", "decision": "reopen"})
    assert client.get(api).json()["decisions"]["open"] == opened - 1
    assert not ApiDecision.objects.filter(api="CUctx_flags").exists()


def test_a_viewer_cannot_decide(team):
    viewer = make_user("vera")
    add_member(team, viewer, "viewer")
    project = make_project(team)
    client = Client()
    client.force_login(viewer)
    client.post(f"/projects/{project.pk}/porting/decisions/", {"api": "a", "decision": "drop"})
    rest = client.post(
        f"/api/v1/projects/{project.pk}/api-decisions/",
        {"api": "a", "decision": "drop"},
        content_type="application/json",
    )
    assert rest.status_code == 403 and not ApiDecision.objects.exists()


def test_scan_settings_are_checked_saved_and_given_to_the_next_scan(user, team):
    from jobs import services

    project = make_project(team)
    client = Client()
    client.force_login(user)
    url = f"/projects/{project.pk}/porting/settings/"
    client.post(
        url,
        {
            "vendored": "libs/**\n\n*_gen.h",
            "not_vendored": "external/ours/**",
            "hazards_off": "nvml",
        },
    )
    project.refresh_from_db()
    assert project.porting_settings == {
        "vendored": ["libs/**", "*_gen.h"],
        "not_vendored": ["external/ours/**"],
        "hazards_off": ["nvml"],
    }
    refused = client.put(
        f"/api/v1/projects/{project.pk}/porting-settings/",
        {"hazards_off": ["no-such-rule"]},
        content_type="application/json",
    )
    assert refused.status_code == 400 and "no-such-rule" in refused.json()["hazards_off"][0]
    _upload(project, user, CUDA)
    job = services.submit_job(user=user, kind="hipify-scan", project=project)
    assert (job.params["vendored"], job.params["not_vendored"], job.params["hazards_off"]) == (
        ["libs/**", "*_gen.h"],
        ["external/ours/**"],
        ["nvml"],
    )


def test_the_compile_status_says_a_check_that_could_not_run_failed_to_run_and_why(user, team):
    project = make_project(team)
    client = Client()
    client.force_login(user)
    api = f"/api/v1/projects/{project.pk}/porting-report/"
    assert client.get(api).json()["compile"]["status"] == "not run"
    make_job(
        team,
        project=project,
        kind="compile-check",
        status=JobStatus.ERRORED,
        finished_at=timezone.now(),
        params={"targets": ["gfx942"]},
        error="hipcc 5.2.3 does not know gfx942",
    )
    status = client.get(api).json()["compile"]
    assert status["targets"] == {
        "gfx942": {"status": "failed to run", "why": "hipcc 5.2.3 does not know gfx942"}
    }
    assert Job.objects.count() == 1


@needs_hipify
@pytest.mark.process
def test_the_report_links_work_from_the_download_and_the_markdown_is_a_download(user, team):
    project = make_project(team)
    _upload(project, user, CUDA)
    job = _scan(user, project)
    client = Client()
    client.force_login(user)
    page = client.get(f"/projects/{project.pk}/porting/").content.decode()
    artifact = Job.objects.get(pk=job).artifacts.get(path="hipify/report.md")
    link = f"/jobs/{job}/artifacts/{artifact.pk}/"
    assert f'href="{link}" download>Markdown report' in page
    markdown = client.get(link)
    assert markdown["Content-Disposition"].startswith("attachment")
    assert b"# HIPIFY porting assessment" in b"".join(markdown.streaming_content)
    download = client.get(f"/projects/{project.pk}/porting/", {"format": "html"}).content.decode()
    assert 'href="/' not in download and 'href="?' not in download
    assert f'href="http://testserver/jobs/{job}/"' in download
    # texture is a CUDA name HIP keeps: never among "non-CUDA names"
    non_cuda = page.split("identity mappings of non-CUDA names")[-1].split("</p>")[0]
    assert "<code>texture</code>" not in non_cuda


def test_a_compile_check_this_host_cannot_run_is_not_offered_and_the_page_says_why(
    user, team, monkeypatch
):
    from stack.kinds import compile_check

    project = make_project(team)
    project.target_gpus = ["MI300X"]
    project.save()
    _upload(project, user, CUDA)
    client = Client()
    client.force_login(user)
    # A host whose hipcc refuses the target, as bookworm's 5.2.3 refuses gfx942: the
    # real hipcc is asked (when installed) in the next test; here its answer is given.
    monkeypatch.setattr(
        compile_check,
        "hipcc_target_problem",
        lambda target: f"this host's hipcc does not know {target} (invalid target ID)",
    )
    page = client.get(f"/projects/{project.pk}/").content.decode()
    assert 'data-step="compile-check"' not in page and 'data-step="hipify-scan"' in page
    assert 'data-step-missing="compile-check"' in page
    assert "does not know gfx942" in page and "make images" in page
    refused = client.post(
        f"/projects/{project.pk}/steps/", {"kind": "compile-check"}, follow=True
    ).content.decode()
    assert "Not submitted" in refused and "make images" in refused
    assert not Job.objects.exists()


@pytest.mark.process
def test_the_hipcc_of_this_host_is_asked_whether_it_knows_a_target():
    from stack.kinds.compile_check import hipcc_target_problem
    from stack.tools import which

    if which("hipcc") is None:
        assert hipcc_target_problem("gfx942") == "hipcc is not installed on this host"
        return
    # Whatever this host's hipcc is, a made-up architecture is one it does not know.
    assert "does not know gfx9ff" in hipcc_target_problem("gfx9ff")


@needs_hipify
@pytest.mark.process
def test_the_convert_jobs_diff_is_shown_in_its_page_a_page_of_files_at_a_time(user, team):
    from jobs import services

    project = make_project(team)
    files = {f"src/k{i:02}.cu": f"void f{i}() {{ cudaMalloc(0, {i}); }}\n" for i in range(12)}
    _upload(project, user, "", files=files)
    job = services.submit_job(user=user, kind="hipify-convert", project=project)
    job.mark_queued("t")
    assert services.execute_job(job.pk, worker="w@h") == JobStatus.SUCCEEDED
    client = Client()
    client.force_login(user)

    def diff(page: str) -> str:
        return page.split('id="diff"')[1].split("</section>")[0]

    first = diff(client.get(f"/jobs/{job.pk}/").content.decode())
    assert "Files 1\u201310 of 12 changed" in first and "src/k00.cu" in first
    assert "src/k11.cu" not in first and "?diff_page=2#diff" in first
    assert '<span class="diff-del">-void f0() { cudaMalloc(0, 0); }</span>' in first
    assert '<span class="diff-add">+void f0() { hipMalloc(0, 0); }</span>' in first
    second = diff(client.get(f"/jobs/{job.pk}/", {"diff_page": 2}).content.decode())
    assert "src/k11.cu" in second and "src/k00.cu" not in second


@needs_hipify
@pytest.mark.process
def test_the_settings_form_shows_what_was_saved_and_saving_it_again_changes_nothing(
    user, team, member_client
):
    project = make_project(team)
    _upload(project, user, CUDA)
    _scan(user, project)
    client = member_client
    saved = {"vendored": "libs/**\n*_gen.h", "not_vendored": "external/ours/**"}
    client.post(f"/projects/{project.pk}/porting/settings/", {**saved, "hazards_off": "nvml"})
    project.refresh_from_db()
    before = project.porting_settings

    page = client.get(f"/projects/{project.pk}/porting/").content.decode()
    shown = {
        name: html.unescape(
            re.search(rf'<textarea id="{name}"[^>]*>(.*?)</textarea>', page, re.S)[1]
        )
        for name in saved
    }
    assert shown == saved  # one glob a line, no template text
    client.post(f"/projects/{project.pk}/porting/settings/", {**shown, "hazards_off": "nvml"})
    project.refresh_from_db()
    assert project.porting_settings == before
