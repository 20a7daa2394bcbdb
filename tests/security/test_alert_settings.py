"""Alert settings: a webhook URL is often a bearer secret (issue 37, item 7)."""

from __future__ import annotations

import pytest
from django.test import Client

from results import alerts
from results.models import Alert, AlertEvent, AlertSettings, Delivery
from teams.choices import Role
from tests.factories import add_member, make_project, make_user

pytestmark = pytest.mark.django_db

HOOK = "https://hooks.example.com/services/T000/B000/XXXXSECRETTOKEN?key=abc123"


def test_a_viewer_sees_the_webhooks_host_but_not_its_secret_path(team):
    project = make_project(team, "solver")
    alerts.save_settings(project, webhook_urls=[HOOK], emails=[], events=[AlertEvent.REGRESSION])
    alert = Alert.objects.create(project=project, event=AlertEvent.REGRESSION)
    Delivery.objects.create(alert=alert, channel="webhook", target=HOOK)
    viewer = make_user("victor")
    add_member(team, viewer, Role.VIEWER)
    client = Client()
    client.force_login(viewer)

    page = client.get(f"/projects/{project.pk}/alerts/").content.decode()

    assert "hooks.example.com" in page
    assert "XXXXSECRETTOKEN" not in page and "abc123" not in page


def test_a_member_still_sees_and_edits_the_whole_url(member_client, team):
    project = make_project(team, "solver")
    alerts.save_settings(project, webhook_urls=[HOOK], emails=[], events=[AlertEvent.REGRESSION])
    page = member_client.get(f"/projects/{project.pk}/alerts/").content.decode()
    assert "XXXXSECRETTOKEN" in page


@pytest.mark.parametrize(
    "url",
    [
        "https://hooks.example.com/a b",
        "https://hooks.example.com/a\tb",
        "https://hooks.example.com/\x7f",
    ],
)
def test_a_webhook_url_with_a_space_or_control_character_is_refused_when_saved(
    member_client, team, url
):
    project = make_project(team, "solver")
    response = member_client.post(
        f"/projects/{project.pk}/alerts/", {"webhook_urls": url, "events": [AlertEvent.REGRESSION]}
    )
    assert response.status_code == 400
    assert "spaces or control characters" in response.content.decode()
    assert not AlertSettings.objects.filter(project=project).exists()
