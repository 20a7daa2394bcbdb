"""The schedules API: team-scoped, checked like a submission, documented in the schema."""

from __future__ import annotations

from datetime import timedelta

import pytest
import yaml
from django.utils import timezone
from rest_framework.test import APIClient

from jobs.models import Schedule
from jobs.services.schedules import fire_due_schedules
from teams.choices import Role
from tests.factories import add_member, make_team, make_user

URL = "/api/v1/schedules/"
NIGHTLY = {"name": "nightly", "kind": "noop", "cron": "0 3 * * *", "time_zone": "Europe/Berlin"}


def test_creating_a_schedule_answers_201_with_its_next_run_in_utc_and_its_zone(api, team, user):
    response = api.post(URL, NIGHTLY, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    schedule = Schedule.objects.get()
    assert response["Location"] == f"{URL}{schedule.pk}/"
    assert body["team"] == team.slug and body["created_by"] == user.username
    assert body["enabled"] is True and body["consecutive_failures"] == 0
    local = body["next_run_local"]
    assert local.endswith(("+01:00", "+02:00")) and "T03:00:00" in local
    assert schedule.next_run_at > timezone.now()


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"cron": "0 25 * * *"}, "cron", "Bad hour field"),
        ({"cron": "0 3 * *"}, "cron", "Five fields"),
        ({"time_zone": "Europe/Atlantis"}, "time_zone", "Unknown time zone"),
        ({"kind": "mine-bitcoin"}, "kind", "Unknown job kind"),
        ({"params": {"seconds": "soon"}}, "params", "seconds"),
        ({"hardware": {"gpus": 8}}, "hardware", "unknown field"),
        ({"timeout_s": 0}, "timeout_s", "greater than or equal to 1"),
        ({"name": ""}, "name", "may not be blank"),
        ({"params": [1]}, "params", "dictionary"),
    ],
)
def test_a_bad_schedule_is_a_400_naming_the_field(api, team, change, field, words):
    response = api.post(URL, {**NIGHTLY, **change}, format="json")
    assert response.status_code == 400, response.content
    assert words in " ".join(response.json()[field])
    assert Schedule.objects.count() == 0


def test_another_teams_slug_or_project_is_a_400(api, team):
    other = make_team("Other")
    response = api.post(URL, {**NIGHTLY, "team": other.slug}, format="json")
    assert response.status_code == 400 and "among yours" in response.json()["team"][0]


def test_a_viewer_can_read_but_not_create_change_or_delete(api, team, user):
    api.post(URL, NIGHTLY, format="json")
    schedule = Schedule.objects.get()
    viewer = make_user("vic")
    add_member(team, viewer, Role.VIEWER)
    client = APIClient()
    client.force_authenticate(viewer)
    assert client.get(f"{URL}{schedule.pk}/").status_code == 200
    refused = client.post(URL, {**NIGHTLY, "team": team.slug}, format="json")
    assert refused.status_code == 400
    assert refused.json()["team"] == ["You cannot submit jobs for this team."]
    assert (
        client.patch(f"{URL}{schedule.pk}/", {"enabled": False}, format="json").status_code == 403
    )
    assert client.delete(f"{URL}{schedule.pk}/").status_code == 403
    assert Schedule.objects.get().enabled


def test_another_teams_schedule_answers_404(api, team):
    other = make_team("Other")
    owner = make_user("oscar")
    add_member(other, owner, Role.MEMBER)
    client = APIClient()
    client.force_authenticate(owner)
    created = client.post(URL, NIGHTLY, format="json").json()
    assert api.get(f"{URL}{created['id']}/").status_code == 404
    assert api.get(URL).json()["results"] == []


def test_disabling_clears_the_next_run_and_enabling_plans_it_from_now(api, team):
    created = api.post(URL, NIGHTLY, format="json").json()
    off = api.patch(f"{URL}{created['id']}/", {"enabled": False}, format="json")
    assert off.status_code == 200 and off.json()["next_run_at"] is None
    on = api.patch(f"{URL}{created['id']}/", {"enabled": True}, format="json")
    assert on.json()["next_run_at"] == created["next_run_at"]


def test_a_change_is_checked_too(api, team):
    created = api.post(URL, NIGHTLY, format="json").json()
    response = api.patch(f"{URL}{created['id']}/", {"cron": "every night"}, format="json")
    assert response.status_code == 400 and "Five fields" in response.json()["cron"][0]
    assert Schedule.objects.get().cron == "0 3 * * *"


def test_a_schedules_jobs_are_listed_and_deleting_it_keeps_them(api, team, no_enqueue):
    created = api.post(URL, NIGHTLY, format="json").json()
    Schedule.objects.update(next_run_at=timezone.now() - timedelta(minutes=1))
    [fired] = fire_due_schedules()
    jobs = api.get(created["links"]["jobs"]).json()["results"]
    assert [j["id"] for j in jobs] == [fired.job_id]
    assert jobs[0]["launch_type"] == "scheduled"
    assert api.delete(f"{URL}{created['id']}/").status_code == 204
    assert api.get(f"/api/v1/jobs/{fired.job_id}/").status_code == 200


def test_every_schedule_operation_has_a_summary_a_description_and_an_example(api):
    schema = yaml.safe_load(api.get("/api/schema/").content)
    operations = {
        (path, method): op
        for path, item in schema["paths"].items()
        if path.startswith("/api/v1/schedules/")
        for method, op in item.items()
        if method in {"get", "post", "put", "patch", "delete"}
    }
    assert len(operations) == 7  # list, create, read, replace, change, delete, jobs
    for key, op in operations.items():
        assert op.get("summary") and op.get("description"), key
    create = operations[("/api/v1/schedules/", "post")]
    body = create["requestBody"]["content"]["application/json"]
    assert body["examples"]["EveryDayAt03:00BerlinTime"]["value"]["cron"] == "0 3 * * *"
