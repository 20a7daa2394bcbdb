"""The project's alerts page: settings written by members, read by viewers, and the log."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from results import alerts
from results.models import (
    Alert,
    AlertEvent,
    AlertSettings,
    Delivery,
    DeliveryAttempt,
    DeliveryChannel,
    DeliveryStatus,
)
from teams.choices import Role
from tests.factories import add_member, make_project, make_team, make_user


@pytest.fixture
def project(team: Any) -> Any:
    return make_project(team, "Nightly GEMM")


def _page(project: Any) -> str:
    return f"/projects/{project.pk}/alerts/"


def test_a_member_saves_webhooks_recipients_and_events(member_client: Client, project: Any) -> None:
    response = member_client.post(
        _page(project),
        {
            "webhook_urls": "https://hooks.example.test/a\n\nhttp://10.0.0.5:8080/b\n",
            "emails": "ops@example.test",
            "events": [AlertEvent.REGRESSION, AlertEvent.SCHEDULE_STALLED],
        },
    )
    assert response.status_code == 302
    config = AlertSettings.objects.get(project=project)
    assert config.webhook_urls == ["https://hooks.example.test/a", "http://10.0.0.5:8080/b"]
    assert config.emails == ["ops@example.test"]
    assert config.events == [AlertEvent.REGRESSION, AlertEvent.SCHEDULE_STALLED]
    assert len(config.secret) >= 40
    html = member_client.get(_page(project)).content.decode()
    assert config.secret in html


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("webhook_urls", "ftp://hooks.example.test/a", "only http:// and https://"),
        ("webhook_urls", "javascript:alert(1)", "only http:// and https://"),
        ("emails", "not-an-address", "is not an e-mail address"),
    ],
)
def test_bad_settings_are_a_400_naming_the_field(
    member_client: Client, project: Any, field: str, value: str, words: str
) -> None:
    response = member_client.post(_page(project), {field: value})
    assert response.status_code == 400
    assert words in response.content.decode()
    assert not AlertSettings.objects.exists()


def test_a_viewer_sees_the_settings_but_not_the_secret_and_cannot_change_them(
    project: Any,
) -> None:
    config = AlertSettings.objects.create(
        project=project, webhook_urls=["https://hooks.example.test/a"], events=["regression"]
    )
    viewer = make_user("vera")
    add_member(project.team, viewer, Role.VIEWER)
    client = Client()
    client.force_login(viewer)
    html = client.get(_page(project)).content.decode()
    assert "https://hooks.example.test/…" in html  # where it goes, not its path (a secret)
    assert config.secret not in html
    client.post(_page(project), {"webhook_urls": "https://evil.example.test/"})
    config.refresh_from_db()
    assert config.webhook_urls == ["https://hooks.example.test/a"]


def test_another_teams_project_is_not_found(member_client: Client) -> None:
    other = make_project(make_team(), "Theirs")
    assert member_client.get(_page(other)).status_code == 404


def test_the_log_shows_each_try_with_its_answer(member_client: Client, project: Any) -> None:
    alert = Alert.objects.create(project=project, event=AlertEvent.REGRESSION)
    delivery = Delivery.objects.create(
        alert=alert,
        channel=DeliveryChannel.WEBHOOK,
        target="https://hooks.example.test/a",
        status=DeliveryStatus.DELIVERED,
        attempts=2,
    )
    now = timezone.now()
    for number, code, error in [(1, 503, "HTTP 503"), (2, 200, "")]:
        DeliveryAttempt.objects.create(
            delivery=delivery,
            number=number,
            started_at=now,
            finished_at=now,
            status_code=code,
            error=error,
            response_excerpt=f"body {number}",
        )
    html = member_client.get(_page(project)).content.decode()
    assert f'data-delivery="{delivery.pk}"' in html
    assert html.count("data-try=") == 2
    assert "HTTP 503" in html and "HTTP 200" in html and "body 2" in html
    assert "Delivered" in html


def test_a_try_with_no_answer_yet_is_shown_as_such_not_as_an_error_of_0_ms(
    member_client: Client, project: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # It was shown in the error style, "(0 ms)", as if the receiver had failed at once.
    alert = Alert.objects.create(project=project, event=AlertEvent.TEST)
    delivery = Delivery.objects.create(
        alert=alert, channel=DeliveryChannel.WEBHOOK, target="https://hooks.example.test/a"
    )

    def killed_mid_try(delivery: Delivery) -> None:
        raise SystemExit("the worker was killed")  # as a process killed mid-try

    monkeypatch.setattr(alerts, "_try_webhook", killed_mid_try)
    with pytest.raises(SystemExit):
        alerts.deliver(delivery.pk)
    html = member_client.get(_page(project)).content.decode()
    shown = html.split('data-try="1">')[1].split("</div>")[0]
    assert '<span class="muted">no answer recorded: the try is under way' in shown
    assert "ms)" not in shown and 'class="error"' not in shown


def test_a_test_alert_goes_to_every_target(member_client: Client, project: Any) -> None:
    AlertSettings.objects.create(
        project=project, webhook_urls=["https://hooks.example.test/a"], emails=["o@example.test"]
    )
    member_client.post(_page(project), {"action": "test"})
    alert = Alert.objects.get()
    assert alert.event == AlertEvent.TEST
    assert alert.deliveries.count() == 2


def test_a_new_secret_replaces_the_old(member_client: Client, project: Any) -> None:
    config = AlertSettings.objects.create(project=project)
    old = config.secret
    member_client.post(_page(project), {"action": "rotate"})
    config.refresh_from_db()
    assert config.secret != old


def test_the_project_page_links_to_its_alerts(member_client: Client, project: Any) -> None:
    assert _page(project) in member_client.get(f"/projects/{project.pk}/").content.decode()
