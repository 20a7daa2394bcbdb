"""Layout the rendered HTML and the stylesheet can show: a checkbox inside its label, beside
its words; a definition-list card its own height."""

from __future__ import annotations

import re

from django.conf import settings

from tests.factories import make_project


def _check_label(html: str, field: str) -> str | None:
    """The label wrapping the checkbox `field`, or None when the box sits elsewhere."""
    match = re.search(
        rf'<label class="check" for="id_{field}">'
        rf'<input type="checkbox" name="{field}"[^>]*> ([^<]+)</label>',
        html,
    )
    return match.group(1) if match else None


def test_the_schedule_forms_enabled_box_sits_in_its_label(member_client):
    html = member_client.get("/schedules/new/").content.decode()
    assert _check_label(html, "enabled") == "Enabled"


def test_the_roadmap_context_forms_boxes_sit_in_their_labels(member_client, team):
    project = make_project(team, "cfd")
    html = member_client.get(f"/projects/{project.pk}/roadmap/").content.decode()
    assert _check_label(html, "multi_gpu") == "Multi-GPU"
    assert _check_label(html, "budget_limited") == "Budget-limited"
    assert 'for="id_engineers">Engineers</label>' in html  # other fields: label above


def test_the_stylesheet_keeps_checkboxes_their_own_width():
    css = (settings.BASE_DIR / "static/css/rocpath.css").read_text()
    assert "input[type=checkbox], input[type=radio] { width:auto;" in css


def test_a_definition_list_card_keeps_its_own_height_beside_a_taller_card(member_client, team):
    project = make_project(team, "cfd")
    html = member_client.get(f"/projects/{project.pk}/").content.decode()
    assert '<section class="grid">\n  <dl class="card facts">' in html  # a grid item itself
    css = (settings.BASE_DIR / "static/css/rocpath.css").read_text()
    assert ".card.facts { align-self:start; margin:1rem 0; }" in css  # not stretched
    assert "align-content:start" in css  # its rows packed at the top, not spread out
