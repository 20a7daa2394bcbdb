"""The porting report's wide tables: never cut off at the card's edge."""

from __future__ import annotations

from tests.factories import make_project
from tests.roadmap.conftest import ready_source, scan


def _report(member_client, team) -> str:
    project = make_project(team, "solver")
    kinds = {"unsupported_device_function": {"total": 2, "code": 1, "comment": 1}}
    scan(project, ready_source(project), warnings_by_kind=kinds)
    return member_client.get(f"/projects/{project.pk}/porting/").content.decode()


def test_the_warnings_and_family_tables_sit_in_a_grid_that_stacks_them_when_narrow(
    member_client, team
):
    html = _report(member_client, team)
    assert '<section class="grid grid-wide" id="warnings-and-families">' in html
    # a kind in words wraps in its cell; as one long token it pushed the table past the card
    assert "<td>unsupported device function</td>" in html
    assert "unsupported_device_function" not in html


def test_the_downloaded_report_carries_the_stacking_rule(member_client, team):
    project = make_project(team, "solver")
    scan(project, ready_source(project))
    html = member_client.get(f"/projects/{project.pk}/porting/?format=html").content.decode()
    assert ".grid-wide { grid-template-columns: repeat(auto-fit, minmax(min(100%, 34rem)" in html


def test_the_flagged_identifiers_kind_reads_in_words(member_client, team):
    project = make_project(team, "solver")
    api = {"identifier": "__activemask", "kind": "unsupported_device_function", "total": 1}
    scan(project, ready_source(project), top_apis=[api])
    html = member_client.get(f"/projects/{project.pk}/porting/").content.decode()
    assert "<td>unsupported device function</td>" in html
    assert "unsupported_device_function" not in html
