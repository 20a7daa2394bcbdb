"""Which code snapshot a job that reads source gets."""

from __future__ import annotations

import dataclasses

import pytest

from jobs import services
from stack.kinds import KINDS
from teams.models import SourceSnapshot
from tests.factories import make_project


@pytest.fixture
def scan_kind(monkeypatch):
    """A kind that takes a source, registered for the test (the real scans are in stack/)."""
    kind = dataclasses.replace(KINDS["noop"], name="scan-like", takes_source=True)
    monkeypatch.setitem(KINDS, "scan-like", kind)
    return kind


def _snapshot(project, status="ready"):
    return SourceSnapshot.objects.create(
        project=project, origin="upload", name="x.zip", status=status
    )


def test_a_job_that_reads_source_gets_the_projects_newest_ready_snapshot(user, team, scan_kind):
    project = make_project(team)
    _snapshot(project)
    newest = _snapshot(project)
    _snapshot(project, status="failed")
    job = services.submit_job(user=user, kind="scan-like", project=project)
    assert job.source == newest


def test_a_job_that_reads_source_needs_a_project_with_source(user, team, scan_kind):
    with pytest.raises(services.SubmissionError) as missing_project:
        services.submit_job(user=user, kind="scan-like")
    assert "project" in missing_project.value.errors
    with pytest.raises(services.SubmissionError) as no_source:
        services.submit_job(user=user, kind="scan-like", project=make_project(team))
    assert "no source code yet" in no_source.value.errors["source"][0]


def test_a_named_snapshot_must_be_ready_and_of_the_same_project(user, team, scan_kind):
    project, other = make_project(team), make_project(team)
    theirs = _snapshot(other)
    with pytest.raises(services.SubmissionError) as wrong:
        services.submit_job(user=user, kind="scan-like", project=project, source=theirs)
    assert "another project" in wrong.value.errors["source"][0]
    pending = _snapshot(project, status="pending")
    with pytest.raises(services.SubmissionError) as not_ready:
        services.submit_job(user=user, kind="scan-like", project=project, source=pending)
    assert "not ready" in not_ready.value.errors["source"][0]
    job = services.submit_job(user=user, kind="scan-like", source=theirs)
    assert job.project == other  # the snapshot names its project


def test_kinds_that_read_no_source_refuse_one(user, team):
    project = make_project(team)
    with pytest.raises(services.SubmissionError) as refused:
        services.submit_job(user=user, kind="noop", project=project, source=_snapshot(project))
    assert "do not read source" in refused.value.errors["source"][0]


def test_another_teams_snapshot_is_an_unknown_source_in_the_api(api, team, scan_kind):
    from tests.factories import make_team

    theirs = _snapshot(make_project(make_team()))
    response = api.post("/api/v1/jobs/", {"kind": "scan-like", "source": theirs.pk}, format="json")
    assert response.status_code == 400 and "source" in response.json()


def test_a_snapshot_alone_decides_the_project_and_the_team(user, team, scan_kind):
    from teams.choices import Role
    from tests.factories import add_member, make_team

    second = make_team()
    add_member(second, user, Role.MEMBER)  # two teams: no default team any more
    snapshot = _snapshot(make_project(second))
    job = services.submit_job(user=user, kind="scan-like", source=snapshot)
    assert job.team == second and job.project == snapshot.project


def test_a_compile_check_of_a_project_targets_its_gpus_unless_it_names_its_own(user, team):
    project = make_project(team)
    project.target_gpus = ["MI250X", "gfx1100"]
    project.save()
    _snapshot(project)
    job = services.submit_job(user=user, kind="compile-check", project=project)
    assert job.params["targets"] == ["gfx90a", "gfx1100"]
    named = services.submit_job(
        user=user, kind="compile-check", project=project, params={"targets": ["gfx942"]}
    )
    assert named.params["targets"] == ["gfx942"]
