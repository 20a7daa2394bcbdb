"""What the pages call things: proper labels, never a field's name or a stored enum value."""

from __future__ import annotations

from jobs.choices import JobStatus
from tests.factories import make_job, make_project


def test_the_project_form_says_target_gpus_in_capitals(member_client):
    html = member_client.get("/projects/").content.decode()
    assert 'for="id_target_gpus">Target GPUs</label>' in html and "Target gpus" not in html


def test_the_roadmap_context_form_names_its_fields_in_words(member_client, team):
    project = make_project(team, "cfd")
    html = member_client.get(f"/projects/{project.pk}/roadmap/").content.decode()
    for label in ("Multi-GPU", "Multi-vendor fleet", "Needs low-level access", "Current GPU price"):
        assert label in html, label
    for raw in ("Multi gpu", "Current gpu price", "Needs low level access", "Time window weeks"):
        assert raw not in html, raw


def test_the_submit_form_says_parameters(member_client):
    html = member_client.get("/jobs/new/").content.decode()
    assert ">Parameters<" in html and ">Params<" not in html


def test_the_project_pages_latest_results_show_the_status_label(member_client, team):
    project = make_project(team, "cfd")
    make_job(team, project=project, kind="probe", status=JobStatus.SUCCEEDED)
    html = member_client.get(f"/projects/{project.pk}/").content.decode()
    assert 'status-succeeded">Succeeded</span>' in html
