"""The decision scenarios of issue 38, through the API, on a real scan's summary and real
result documents (the H200 blas-bench run, a candidate derived from it). make test runs
them on PostgreSQL and again on SQLite (scripts/test.sh --sqlite)."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from roadmap.models import DecisionContext
from teams.choices import Role
from tests.factories import add_member, make_project, make_user
from tests.roadmap.conftest import GAPS_CU, derived, h200_document, ingest, real_scan

pytestmark = [pytest.mark.django_db, pytest.mark.process]  # the scan reads hipify-perl's tables


@pytest.fixture
def lead(team):
    user = make_user()
    add_member(team, user, Role.ADMIN)
    return user


@pytest.fixture
def api(lead):
    client = APIClient()
    client.force_authenticate(lead)
    return client


def _roadmap(api, project) -> dict:
    answer = api.get(f"/api/v1/projects/{project.pk}/roadmap/")
    assert answer.status_code == 200, answer.content
    return answer.json()


@pytest.fixture
def decided(team, api):
    """A small tree with two APIs HIP lacks, both decided; the H200 and an MI300X measured
    on the same cases; a window the estimate fits; a multi-vendor fleet; and the two
    checklist answers only the team can give."""
    project = make_project(team, "reduce")
    project.target_gpus = ["MI300X"]
    project.save()
    real_scan(project, {"reduce.cu": GAPS_CU})
    for name in ("cudaGraphExecNodeSetParams", "__shfl_down_sync"):
        made = api.post(
            f"/api/v1/projects/{project.pk}/api-decisions/",
            {"api": name, "decision": "port", "note": "by hand in phase 2"},
            format="json",
        )
        assert made.status_code == 200, made.content
    document = h200_document()
    ingest(project, document)
    ingest(project, derived(document, default=0.95))
    DecisionContext.objects.create(
        project=project, time_window_weeks=6, engineers=2, multi_vendor_fleet=True
    )
    for question in ("toolchain", "maintenance"):
        said = api.post(
            f"/api/v1/projects/{project.pk}/roadmap/checklist/",
            {"question": question, "answer": "yes", "note": "we asked the team"},
            format="json",
        )
        assert said.status_code == 200, said.content
    return project


def test_a_small_decided_tree_with_two_vendors_passes_phase_one(api, decided):
    doc = _roadmap(api, decided)
    first = doc["phases"][0]
    failing = [c for c in first["criteria"] if c["status"] != "passed"]
    assert first["gate_open"] and not failing, failing
    assert doc["phases"][1]["status"] == "active"
    assert doc["recommendation"]["title"] == "Use ROCm"


def test_a_no_in_the_checklist_changes_the_answer_and_shuts_phase_one(api, decided):
    api.post(
        f"/api/v1/projects/{decided.pk}/roadmap/checklist/",
        {"question": "maintenance", "answer": "no", "note": "no one to keep the port alive"},
        format="json",
    )
    doc = _roadmap(api, decided)
    assert doc["recommendation"]["title"] == "Not yet decidable"
    assert not doc["phases"][0]["gate_open"]
    said = " ".join(r["text"] for r in doc["recommendation"]["reasons"])
    assert "no one to keep the port alive" in said


def test_an_unrelated_plain_c_upload_moves_no_gate_and_no_answer(api, decided):
    before = _roadmap(api, decided)
    from tests.teams.test_current_code import PLAIN_C, _named

    real_scan(decided, PLAIN_C, source=_named(decided, "util.tar.gz"))
    after = _roadmap(api, decided)
    assert after["recommendation"] == before["recommendation"]
    assert [p["gate_open"] for p in after["phases"]] == [p["gate_open"] for p in before["phases"]]


def test_an_override_is_refused_on_a_passing_criterion_and_revoked_by_the_api(api, decided):
    phase = {"phase": 1, "reason": "the comparison was run by the vendor on our cases"}
    url = f"/api/v1/projects/{decided.pk}/roadmap/overrides/"
    refused = api.post(url, {**phase, "criterion": "libraries_compared"}, format="json")
    assert refused.status_code == 400 and "nothing to override" in str(refused.json())
    api.post(
        f"/api/v1/projects/{decided.pk}/roadmap/checklist/",
        {"question": "toolchain", "answer": "no", "note": "nobody knows hipcc yet"},
        format="json",
    )
    made = api.post(url, {**phase, "criterion": "checklist_complete"}, format="json")
    assert made.status_code == 201, made.content
    assert _roadmap(api, decided)["phases"][0]["gate_open"]
    gone = api.delete(f"{url}{made.json()['id']}/")
    assert gone.status_code == 200
    assert not _roadmap(api, decided)["phases"][0]["gate_open"]
