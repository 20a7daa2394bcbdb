"""Names end up in mail headers, reports and logs: a CR or LF in one forged headers and
left its project's e-mail alerts failing for ever. Names with control characters are
refused where they come in; rows saved before that fail their mail once, for good."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from jobs.models import Schedule
from results import alerts
from results.alert_models import AlertSettings, Delivery, DeliveryChannel, DeliveryStatus
from teams.models import AdoptionProject, Team
from tests.factories import make_project

pytestmark = pytest.mark.django_db

BAD_NAMES = [
    "lbm\r\nBcc: victim@example.test",
    "lbm\nsecond line",
    "lbm\rback",
    "tab\tbed",
    "bell\x07",
    "delete\x7f",
]
SCHEDULE = {"kind": "noop", "cron": "0 3 * * *", "time_zone": "Europe/Berlin"}


@pytest.mark.parametrize("name", BAD_NAMES)
def test_the_api_refuses_a_project_name_with_control_characters(api, team, name):
    response = api.post("/api/v1/projects/", {"team": team.slug, "name": name}, format="json")
    assert response.status_code == 400, response.content
    assert "control characters" in response.json()["name"][0]
    assert not AdoptionProject.objects.exists()


def test_the_project_form_refuses_a_name_with_a_line_break(member_client, team):
    response = member_client.post("/projects/", {"team": team.pk, "name": "lbm\r\nBcc: x@y.z"})
    assert response.status_code == 200
    assert "control characters" in response.context["form"].errors["name"][0]
    assert not AdoptionProject.objects.exists()
    ok = member_client.post("/projects/", {"team": team.pk, "name": "lbm übersetzt"})
    assert ok.status_code == 302 and AdoptionProject.objects.get().name == "lbm übersetzt"


@pytest.mark.parametrize("name", ["night\r\nly", "night\tly"])
def test_the_api_refuses_a_schedule_name_with_control_characters(api, team, name):
    response = api.post("/api/v1/schedules/", {**SCHEDULE, "name": name}, format="json")
    assert response.status_code == 400, response.content
    assert "control characters" in response.json()["name"][0]
    assert not Schedule.objects.exists()


def test_the_schedule_form_refuses_a_name_with_a_line_break(member_client, team):
    form = {**SCHEDULE, "name": "night\nly", "team": team.pk, "params": "{}", "hardware": "{}"}
    response = member_client.post("/schedules/new/", form)
    assert response.status_code == 200
    assert "control characters" in response.context["form"].errors["name"][0]
    assert not Schedule.objects.exists()


def test_a_team_name_with_a_line_break_is_refused_by_its_model_form_validation():
    with pytest.raises(ValidationError) as refused:
        Team(name="ops\r\nBcc: x@y.z", slug="ops").full_clean()
    assert "control characters" in str(refused.value.message_dict["name"])


def test_an_existing_project_with_a_line_break_in_its_name_fails_its_mail_once(team):
    project = make_project(team)
    # saved before names were checked: straight to the table, as old rows are
    AdoptionProject.objects.filter(pk=project.pk).update(name="lbm\r\nBcc: victim@example.test")
    config = AlertSettings.objects.create(project=project, emails=["ops@example.test"])
    assert alerts.send_test(config) == 1
    delivery = Delivery.objects.get(channel=DeliveryChannel.EMAIL)

    assert alerts.deliver(delivery.pk) is None  # no next try
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.FAILED and delivery.next_attempt_at is None
    attempt = delivery.tries.get()
    assert "BadHeaderError" in attempt.error and not attempt.will_retry
    assert delivery.pk not in alerts.requeue_overdue()
