"""The current code: an unrelated upload moves no estimate, gate or answer until a team
admin switches to it (issue 38: a plain-C util.c beside a 627-file CUDA tree took the
estimate from 1,369.8 h to 0 h and the answer from "Stay on CUDA" to "Use ROCm")."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from roadmap.criteria import Facts
from roadmap.recommend import recommend
from teams.choices import Role
from teams.sources import current_code, newest_ready, switch_lineage
from tests.factories import add_member, make_project, make_user
from tests.roadmap.conftest import GAPS_CU, ready_source, real_scan

CUDA_TREE = {"kernels/reduce.cu": GAPS_CU}
PLAIN_C = {"util.c": "int add(int a, int b) { return a + b; }\n"}

pytestmark = [pytest.mark.django_db, pytest.mark.process]  # real scans: hipify-perl's tables


def _named(project, name: str):
    source = ready_source(project)
    source.name = name
    source.save(update_fields=["name"])
    return source


@pytest.fixture
def project(team):
    project = make_project(team, "solver")
    real_scan(project, CUDA_TREE, source=_named(project, "solver.tar.gz"))
    return project


def test_a_plain_c_upload_of_another_lineage_moves_no_estimate_and_no_answer(project, user):
    before = recommend(Facts(project))
    cuda = newest_ready(project)
    util = _named(project, "util.tar.gz")
    real_scan(project, PLAIN_C, source=util)  # its scan finds no CUDA at all
    facts = Facts(project)
    assert facts.source == cuda and facts.scan.source_id == cuda.pk
    after = recommend(facts)
    assert after.verdict == before.verdict
    assert after.figures["effort_hours"] == before.figures["effort_hours"] > 0
    api = APIClient()
    api.force_authenticate(user)
    shown = api.get(f"/api/v1/projects/{project.pk}/current-code/").json()
    assert shown["lineage"] == "upload solver" and shown["source"] == cuda.pk
    assert shown["waiting"] == [
        {
            "source": util.pk,
            "lineage": "upload util",
            "name": "util.tar.gz",
            "why": "another lineage",
        }
    ]


def test_only_a_team_admin_switches_the_current_code(project, team, user):
    util = _named(project, "util.tar.gz")
    api = APIClient()
    api.force_authenticate(user)  # a member
    url = f"/api/v1/projects/{project.pk}/current-code/"
    refused = api.post(url, {"source": util.pk}, format="json")
    assert refused.status_code == 403 and "admin" in refused.json()["detail"]
    assert newest_ready(project) != util
    admin = make_user("lead")
    add_member(team, admin, Role.ADMIN)
    api.force_authenticate(admin)
    switched = api.post(url, {"source": util.pk}, format="json")
    assert switched.status_code == 200, switched.content
    assert switched.json()["lineage"] == "upload util" and switched.json()["chosen_by"] == "lead"
    project.refresh_from_db()
    assert newest_ready(project) == util


def test_a_plain_c_tree_uploaded_under_the_cuda_codes_name_waits_for_an_admin(project, team):
    cuda = newest_ready(project)
    before = recommend(Facts(project))
    plain = _named(project, "solver.tar.gz")  # the same lineage: the name says so
    real_scan(project, PLAIN_C, source=plain)
    assert newest_ready(project) == cuda  # its scan finds no CUDA: held back
    assert recommend(Facts(project)).verdict == before.verdict
    shown = current_code(project)["waiting"]
    assert shown == [{"source": plain.pk, "lineage": "upload solver", "name": "solver.tar.gz",
                      "why": "a scan finds no CUDA in it"}]  # fmt: skip
    admin = make_user("lead")
    add_member(team, admin, Role.ADMIN)
    switch_lineage(project, plain, admin)  # confirmed: the port removed the last CUDA
    assert newest_ready(project) == plain
