"""Rate caps that schedules and the portal's submit form must not bypass: a team's enabled
schedules are capped, a schedule fires at most every ROCPATH_SCHEDULE_MIN_PERIOD_S, its fires
count against the submit rate, and the form shares the REST API's submit allowance."""

from __future__ import annotations

from rest_framework.test import APIClient

from jobs.models import Job
from stack.kinds.noop import KIND as NOOP


def _rates(settings, **rates: str) -> None:
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], **rates},
    }


# --- the portal's submit form -----------------------------------------------------
FORM = {"kind": NOOP.name, "params": "{}"}


def test_the_submit_form_answers_429_past_the_rate(member_client, team, settings, no_enqueue):
    _rates(settings, submit="2/minute")
    form = {**FORM, "team": team.pk}
    for _ in range(2):
        assert member_client.post("/jobs/new/", form).status_code == 302
    response = member_client.post("/jobs/new/", form)
    assert response.status_code == 429
    assert int(response["Retry-After"]) > 0
    assert "try again in" in response.content.decode().lower()
    assert Job.objects.count() == 2


def test_the_form_and_the_api_share_one_allowance(member_client, user, team, settings, no_enqueue):
    _rates(settings, submit="2/minute")
    api = APIClient()
    api.force_authenticate(user)
    assert api.post("/api/v1/jobs/", {"kind": NOOP.name}, format="json").status_code == 201
    assert member_client.post("/jobs/new/", {**FORM, "team": team.pk}).status_code == 302
    assert member_client.post("/jobs/new/", {**FORM, "team": team.pk}).status_code == 429
    assert api.post("/api/v1/jobs/", {"kind": NOOP.name}, format="json").status_code == 429
