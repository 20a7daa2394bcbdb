"""Rate caps that schedules and the portal's submit form must not bypass: a team's enabled
schedules are capped, a schedule fires at most every ROCPATH_SCHEDULE_MIN_PERIOD_S, its fires
count against the submit rate, and the form shares the REST API's submit allowance."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone
from rest_framework.test import APIClient

from jobs.choices import LaunchType
from jobs.models import Job, Schedule
from jobs.services.schedules import fire_due_schedules, save_schedule
from jobs.services.submit import SubmissionError
from stack.kinds.noop import KIND as NOOP


def _rates(settings, **rates: str) -> None:
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], **rates},
    }


def _schedule(user, team, name: str = "nightly", cron: str = "0 3 * * *") -> Schedule:
    return save_schedule(
        Schedule(name=name, team=team, kind=NOOP.name, params={"seconds": 0}, cron=cron),
        user=user,
    )


# --- how many, how often ----------------------------------------------------------
def test_a_team_past_its_enabled_schedules_cap_is_refused_naming_the_limit(user, team, settings):
    settings.ROCPATH_SCHEDULES_PER_TEAM_MAX = 3
    for n in range(3):
        _schedule(user, team, name=f"s{n}")
    try:
        _schedule(user, team, name="one too many")
    except SubmissionError as exc:
        said = str(exc.errors)
    else:
        raise AssertionError("the fourth enabled schedule was saved")
    assert "3" in said and "enabled schedules" in said
    assert Schedule.objects.filter(team=team).count() == 3
    # A disabled one is not counted, and one disabled makes room.
    Schedule.objects.filter(name="s0").update(enabled=False)
    _schedule(user, team, name="now there is room")


def test_the_api_answers_400_past_the_cap(api, team, settings):
    settings.ROCPATH_SCHEDULES_PER_TEAM_MAX = 1
    body = {"name": "a", "kind": "noop", "cron": "0 3 * * *", "time_zone": "UTC"}
    assert api.post("/api/v1/schedules/", body, format="json").status_code == 201
    response = api.post("/api/v1/schedules/", {**body, "name": "b"}, format="json")
    assert response.status_code == 400
    assert "at most 1 enabled schedules" in str(response.json())


def test_the_portal_form_says_the_cap(member_client, user, team, settings):
    settings.ROCPATH_SCHEDULES_PER_TEAM_MAX = 1
    _schedule(user, team)
    response = member_client.post(
        "/schedules/new/",
        {
            "name": "second",
            "kind": "noop",
            "params": "{}",
            "hardware": "{}",
            "team": team.pk,
            "cron": "0 4 * * *",
            "time_zone": "UTC",
            "enabled": "on",
        },
    )
    assert response.status_code == 200
    assert "at most 1 enabled schedules" in response.content.decode()
    assert Schedule.objects.count() == 1


def test_an_every_minute_schedule_is_refused(user, team, settings):
    settings.ROCPATH_SCHEDULE_MIN_PERIOD_S = 300
    for cron in ("* * * * *", "*/2 * * * *", "0,1 3 * * *"):
        try:
            _schedule(user, team, cron=cron)
        except SubmissionError as exc:
            assert "300" in exc.errors["cron"][0], exc.errors
        else:
            raise AssertionError(f"{cron!r} was saved")
    _schedule(user, team, cron="*/5 * * * *")  # exactly the minimum passes


def test_the_api_refuses_an_every_minute_schedule(api, settings):
    settings.ROCPATH_SCHEDULE_MIN_PERIOD_S = 300
    body = {"name": "a", "kind": "noop", "cron": "* * * * *", "time_zone": "UTC"}
    response = api.post("/api/v1/schedules/", body, format="json")
    assert response.status_code == 400 and "300" in response.json()["cron"][0]


# --- the fires' budget ------------------------------------------------------------
def test_fires_past_the_submit_rate_are_skipped_and_recorded(user, team, settings, no_enqueue):
    _rates(settings, submit="2/minute")
    rows = [_schedule(user, team, name=f"s{n}") for n in range(4)]
    Schedule.objects.update(next_run_at=timezone.now() - timedelta(minutes=1))
    fired = fire_due_schedules()
    assert len(fired) == 4
    assert Job.objects.filter(launch_type=LaunchType.SCHEDULED).count() == 2
    skipped = Schedule.objects.filter(pk__in=[r.pk for r in rows], last_job__isnull=True)
    assert skipped.count() == 2
    for schedule in skipped:
        assert schedule.consecutive_failures == 1
        assert "skipped" in schedule.last_error and "2/minute" in schedule.last_error
        assert schedule.next_run_at > timezone.now()  # it fires again at its next time


def test_a_fire_shares_its_owners_submit_allowance(api, user, team, settings, no_enqueue):
    _rates(settings, submit="1/minute")
    assert api.post("/api/v1/jobs/", {"kind": NOOP.name}, format="json").status_code == 201
    schedule = _schedule(user, team)
    Schedule.objects.update(next_run_at=timezone.now() - timedelta(minutes=1))
    fire_due_schedules()
    schedule.refresh_from_db()
    assert schedule.last_job is None and "skipped" in schedule.last_error


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


def test_the_rerun_button_takes_from_the_same_allowance(member_client, team, settings, no_enqueue):
    _rates(settings, submit="2/minute")
    assert member_client.post("/jobs/new/", {**FORM, "team": team.pk}).status_code == 302
    original = Job.objects.get()
    assert member_client.post(f"/jobs/{original.pk}/rerun/").status_code == 302
    refused = member_client.post(f"/jobs/{original.pk}/rerun/", follow=True)
    assert "try again in" in refused.content.decode().lower()
    assert Job.objects.count() == 2
