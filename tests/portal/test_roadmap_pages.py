"""The roadmap pages and API: what a member sees and records, what a viewer cannot,
and the report in HTML, PDF and Markdown."""

from __future__ import annotations

import io

import pytest
from django.test import Client

from roadmap.models import ChecklistAnswer, GateOverride
from teams.choices import Role
from tests.factories import add_member, make_project, make_team, make_user
from tests.roadmap.conftest import benchmark, environment, ready_source, scan

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup():
    team = make_team()
    project = make_project(team, name="solver port")
    admin, member, viewer = make_user(), make_user(), make_user()
    add_member(team, admin, Role.ADMIN)
    add_member(team, member, Role.MEMBER)
    add_member(team, viewer, Role.VIEWER)
    clients = {}
    for name, user in (("admin", admin), ("member", member), ("viewer", viewer)):
        clients[name] = Client()
        clients[name].force_login(user)
    return project, clients


def test_the_roadmap_page_shows_four_phases_their_gates_and_the_recommendation(setup):
    project, clients = setup
    scan(project, ready_source(project))
    html = clients["member"].get(f"/projects/{project.pk}/roadmap/").content.decode()
    for n in (1, 2, 3, 4):
        assert f'data-phase="{n}"' in html
    assert 'data-criterion="scan_of_current_code" data-verdict="passed"' in html
    assert 'data-criterion="libraries_compared" data-verdict="failed"' in html
    assert (
        'data-phase="1" data-status="active"' in html
        and 'data-phase="2" data-status="not_started"' in html
    )
    assert "Recommendation:" in html and 'id="checklist"' in html


def test_another_teams_roadmap_is_not_found(setup):
    _, clients = setup
    other = make_project(make_team())
    assert clients["member"].get(f"/projects/{other.pk}/roadmap/").status_code == 404
    assert clients["member"].get(f"/api/v1/projects/{other.pk}/roadmap/").status_code == 404


def test_an_admin_overrides_a_criterion_with_a_reason_and_it_is_shown_and_revoked(setup):
    project, clients = setup
    clients["admin"].get(f"/projects/{project.pk}/roadmap/")
    clients["admin"].post(
        f"/projects/{project.pk}/roadmap/phases/1/override/",
        {
            "criterion": "libraries_compared",
            "reason": "vendor figures accepted until the MI300X arrives",
        },
    )
    o = GateOverride.objects.get()
    assert o.criterion == "libraries_compared" and o.by is not None
    html = clients["member"].get(f"/projects/{project.pk}/roadmap/").content.decode()
    assert 'data-override="libraries_compared"' in html and "vendor figures accepted" in html
    assert "Open by override" in html
    report = clients["member"].get(f"/api/v1/projects/{project.pk}/roadmap/report.md")
    assert "**Open by override**" in report.content.decode()
    refused = clients["member"].delete(f"/api/v1/projects/{project.pk}/roadmap/overrides/{o.pk}/")
    assert refused.status_code == 403
    revoked = clients["admin"].delete(f"/api/v1/projects/{project.pk}/roadmap/overrides/{o.pk}/")
    assert revoked.status_code == 200 and revoked.json()["revoked_at"]
    html = clients["member"].get(f"/projects/{project.pk}/roadmap/").content.decode()
    assert 'data-override="libraries_compared"' not in html


def test_a_member_may_not_override(setup):
    project, clients = setup
    clients["member"].get(f"/projects/{project.pk}/roadmap/")
    refused = clients["member"].post(
        f"/api/v1/projects/{project.pk}/roadmap/overrides/",
        {"phase": 1, "criterion": "libraries_compared",
         "reason": "vendor figures accepted until the MI300X arrives"},
        content_type="application/json",
    )  # fmt: skip
    assert refused.status_code == 403 and not GateOverride.objects.exists()


def test_an_override_without_a_reason_is_refused_and_nothing_is_recorded(setup):
    project, clients = setup
    clients["admin"].get(f"/projects/{project.pk}/roadmap/")
    response = clients["admin"].post(
        f"/projects/{project.pk}/roadmap/phases/1/override/",
        {"criterion": "libraries_compared", "reason": ""},
        follow=True,
    )
    assert "Not recorded" in response.content.decode() and not GateOverride.objects.exists()


def test_a_viewer_can_read_but_not_override_or_answer(setup):
    project, clients = setup
    assert clients["viewer"].get(f"/projects/{project.pk}/roadmap/").status_code == 200
    clients["viewer"].post(
        f"/projects/{project.pk}/roadmap/phases/1/override/",
        {"criterion": "libraries_compared", "reason": "a viewer should not be able to do this"},
    )
    clients["viewer"].post(
        f"/projects/{project.pk}/roadmap/checklist/", {"question": "toolchain", "answer": "yes"}
    )
    assert not GateOverride.objects.exists() and not ChecklistAnswer.objects.exists()
    api = clients["viewer"].post(
        f"/api/v1/projects/{project.pk}/roadmap/overrides/",
        {"phase": 1, "criterion": "libraries_compared", "reason": "a viewer should not be able to"},
        content_type="application/json",
    )
    assert api.status_code == 403


def test_the_api_records_an_answer_and_refuses_an_unknown_question(setup):
    project, clients = setup
    ok = clients["member"].post(
        f"/api/v1/projects/{project.pk}/roadmap/checklist/",
        {"question": "toolchain", "answer": "partly", "note": "two know HIP"},
        content_type="application/json",
    )
    assert ok.status_code == 200
    bad = clients["member"].post(
        f"/api/v1/projects/{project.pk}/roadmap/checklist/",
        {"question": "luck", "answer": "yes"},
        content_type="application/json",
    )
    assert bad.status_code == 400 and "question" in bad.json()
    doc = clients["member"].get(f"/api/v1/projects/{project.pk}/roadmap/").json()
    row = next(r for r in doc["checklist"] if r["key"] == "toolchain")
    assert (row["answer"], row["source"], row["note"]) == ("partly", "team", "two know HIP")


@pytest.mark.process
def test_the_report_renders_as_html_markdown_and_a_pdf_with_its_sections(setup):
    from pypdf import PdfReader

    project, clients = setup
    scan(project, ready_source(project), hours=150)
    benchmark(project, environment("nvidia", "NVIDIA H200"), {4096: 650.0})
    benchmark(project, environment("amd", "AMD Instinct MI300X"), {4096: 700.0})
    html = clients["member"].get(f"/projects/{project.pk}/report/").content.decode()
    md = clients["member"].get(f"/projects/{project.pk}/report.md")
    assert md["Content-Disposition"].endswith('.md"')
    pdf = clients["member"].get(f"/projects/{project.pk}/report.pdf")
    assert pdf["Content-Type"] == "application/pdf"
    text = "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(pdf.content)).pages)
    for section in (
        "Recommendation",
        "Phase status",
        "Porting assessment",
        "Benchmark comparison",
        "Decision checklist",
    ):
        assert section in html and section in text, section
    assert "1.08" in text  # 700 / 650, the measured ratio
    assert "## Porting assessment" in md.content.decode() and "150" in md.content.decode()
    api = clients["member"].get(f"/api/v1/projects/{project.pk}/roadmap/report.md")
    assert api.status_code == 200 and api.content.decode().startswith(
        "# Adoption roadmap: solver port"
    )


def test_the_project_list_says_which_phase_each_project_is_in(setup):
    project, clients = setup
    html = clients["member"].get("/projects/").content.decode()
    assert f'data-phase-of="{project.pk}"' in html and "not opened" in html
    clients["member"].get(f"/projects/{project.pk}/roadmap/")  # phase 1 starts when first seen
    html = clients["member"].get("/projects/").content.decode()
    assert "phase 1: Assessment &amp; planning" in html


def test_the_project_home_shows_the_phases_and_the_next_actions(setup):
    project, clients = setup
    html = clients["member"].get(f"/projects/{project.pk}/").content.decode()
    assert 'id="roadmap-summary"' in html and "Next actions in phase 1" in html
    assert 'data-next="scan_of_current_code"' in html


def test_the_team_sets_its_workload_weights_and_bad_ones_are_refused(setup):
    from roadmap.models import DecisionContext

    project, clients = setup
    url = f"/projects/{project.pk}/roadmap/context/"
    clients["member"].post(
        url, {"time_window_weeks": 6, "workload_weights": "gemm bf16=3\ngemm int8=0"}
    )
    assert DecisionContext.objects.get(project=project).workload_weights == {
        "gemm bf16": 3.0,
        "gemm int8": 0.0,
    }
    page = clients["member"].get(f"/projects/{project.pk}/roadmap/").content.decode()
    assert "gemm bf16=3" in page
    refused = clients["member"].post(url, {"workload_weights": "gemm bf16=lots"}, follow=True)
    assert "Not saved" in refused.content.decode()
    assert DecisionContext.objects.get(project=project).workload_weights["gemm bf16"] == 3.0


def test_the_decision_context_is_read_and_set_through_the_api(setup):
    project, clients = setup
    url = f"/api/v1/projects/{project.pk}/roadmap/context/"
    assert clients["member"].get(url).json()["time_window_weeks"] is None
    saved = clients["member"].put(
        url,
        {"time_window_weeks": 6, "engineers": 2, "workload_weights": {"gemm  bf16": 3}},
        content_type="application/json",
    )
    assert saved.status_code == 200, saved.content
    again = clients["member"].get(url).json()
    assert again["time_window_weeks"] == 6 and again["workload_weights"] == {"gemm bf16": 3.0}
    bad = clients["member"].put(
        url, {"workload_weights": {"gemm bf16": -1}}, content_type="application/json"
    )
    assert bad.status_code == 400
    refused = clients["viewer"].put(url, {"engineers": 9}, content_type="application/json")
    assert refused.status_code == 403
    assert clients["member"].get(url).json()["engineers"] == 2
