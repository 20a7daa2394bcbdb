"""The schedules pages: make, change, stop and delete a schedule; see its times and jobs."""

from __future__ import annotations

import zoneinfo
from datetime import UTC, datetime, timedelta

from django.contrib.admin.sites import site
from django.test import Client
from django.utils import timezone

from jobs.models import Job, Schedule
from jobs.services.schedules import fire_due_schedules, save_schedule
from teams.choices import Role
from tests.factories import add_member, make_team, make_user

FORM = {
    "name": "nightly",
    "kind": "noop",
    "params": '{"seconds": 0}',
    "hardware": "{}",
    "cron": "30 2 * * *",
    "time_zone": "Europe/Berlin",
    "enabled": "on",
}


def _schedule(user, team, **fields) -> Schedule:
    fields.setdefault("cron", "30 2 * * *")
    fields.setdefault("time_zone", "Europe/Berlin")
    return save_schedule(
        Schedule(name=fields.pop("name", "nightly"), team=team, kind="noop", **fields), user=user
    )


def test_a_member_creates_a_schedule_from_the_form(member_client, team, user):
    response = member_client.post("/schedules/new/", {**FORM, "team": team.pk})
    schedule = Schedule.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/schedules/{schedule.pk}/"
    assert schedule.created_by == user and schedule.params == {"seconds": 0}
    assert schedule.enabled and schedule.next_run_at is not None


def test_a_bad_expression_or_zone_is_shown_on_the_form_beside_its_field(member_client, team):
    response = member_client.post(
        "/schedules/new/", {**FORM, "team": team.pk, "cron": "30 2 * *", "time_zone": "Berlin"}
    )
    assert response.status_code == 200 and Schedule.objects.count() == 0
    form = response.context["form"]
    assert "Five fields" in form.errors["cron"][0]
    assert "Unknown time zone 'Berlin'" in form.errors["time_zone"][0]
    assert 'class="error">Five fields' in response.content.decode()
    response = member_client.post("/schedules/new/", {**FORM, "team": team.pk, "params": "[1]"})
    assert response.context["form"].errors["params"] == ["The parameters must be a JSON object."]


def test_the_next_run_is_shown_in_the_schedules_own_zone(member_client, team, user):
    schedule = _schedule(user, team, cron="0 9 * * *", time_zone="America/New_York")
    Schedule.objects.filter(pk=schedule.pk).update(
        next_run_at=datetime(2027, 7, 1, 13, 0, tzinfo=UTC)
    )
    listing = member_client.get("/schedules/").content.decode()
    assert "2027-07-01 09:00 EDT" in listing
    page = member_client.get(f"/schedules/{schedule.pk}/").content.decode()
    assert "2027-07-01 09:00 EDT" in page and "(13:00 UTC)" in page


def test_the_page_lists_the_schedules_recent_jobs_and_its_last_error(
    member_client, team, user, no_enqueue
):
    schedule = _schedule(user, team)
    Schedule.objects.filter(pk=schedule.pk).update(
        next_run_at=timezone.now() - timedelta(minutes=1)
    )
    [fired] = fire_due_schedules()
    Schedule.objects.filter(pk=schedule.pk).update(
        last_error="refused: team: You cannot submit jobs for this team.", consecutive_failures=2
    )
    page = member_client.get(f"/schedules/{schedule.pk}/").content.decode()
    assert f'data-job="{fired.job_id}"' in page
    assert "refused: team: You cannot submit jobs for this team." in page and "2 in a row" in page
    assert "Stopped (refused)" in page
    listing = member_client.get("/schedules/").content.decode()
    assert f'<a href="/jobs/{fired.job_id}/">{fired.job_id}</a>' in listing


def test_editing_a_schedule_plans_its_next_run_afresh(member_client, team, user):
    schedule = _schedule(user, team)
    response = member_client.post(
        f"/schedules/{schedule.pk}/edit/", {**FORM, "team": team.pk, "cron": "0 12 * * *"}
    )
    assert response.status_code == 302
    schedule.refresh_from_db()
    assert schedule.cron == "0 12 * * *"
    berlin = schedule.next_run_at.astimezone(zoneinfo.ZoneInfo("Europe/Berlin"))
    assert (berlin.hour, berlin.minute) == (12, 0) and schedule.next_run_at > timezone.now()


def test_disable_enable_and_delete_from_the_page(member_client, team, user, no_enqueue):
    schedule = _schedule(user, team)
    member_client.post(f"/schedules/{schedule.pk}/toggle/", {"enabled": "0"})
    schedule.refresh_from_db()
    assert not schedule.enabled and schedule.next_run_at is None
    member_client.post(f"/schedules/{schedule.pk}/toggle/", {"enabled": "1"})
    schedule.refresh_from_db()
    assert schedule.enabled and schedule.next_run_at > timezone.now()
    response = member_client.post(f"/schedules/{schedule.pk}/delete/")
    assert response.status_code == 302 and response["Location"] == "/schedules/"
    assert not Schedule.objects.exists()


def test_a_viewer_sees_a_schedule_but_cannot_change_it(team, user):
    schedule = _schedule(user, team)
    viewer = make_user("vic")
    add_member(team, viewer, Role.VIEWER)
    client = Client()
    client.force_login(viewer)
    page = client.get(f"/schedules/{schedule.pk}/").content.decode()
    assert "nightly" in page and 'id="toggle"' not in page
    client.post(f"/schedules/{schedule.pk}/toggle/", {"enabled": "0"})
    client.post(f"/schedules/{schedule.pk}/delete/")
    assert client.get(f"/schedules/{schedule.pk}/edit/").status_code == 302
    schedule.refresh_from_db()
    assert schedule.enabled


def test_another_teams_schedule_is_a_404(member_client, team):
    other = make_team("Other")
    owner = make_user("oscar")
    add_member(other, owner, Role.MEMBER)
    theirs = _schedule(owner, other)
    assert member_client.get(f"/schedules/{theirs.pk}/").status_code == 404
    assert member_client.post(f"/schedules/{theirs.pk}/delete/").status_code == 404
    assert Schedule.objects.filter(pk=theirs.pk).exists()


def test_the_admin_lists_schedules_and_filters_jobs_by_the_scheduled_launch_type(
    team, user, no_enqueue
):
    admin_user = make_user("root")
    admin_user.is_staff = admin_user.is_superuser = True
    admin_user.save()
    schedule = _schedule(user, team)
    Schedule.objects.filter(pk=schedule.pk).update(
        next_run_at=timezone.now() - timedelta(minutes=1)
    )
    [fired] = fire_due_schedules()
    client = Client()
    client.force_login(admin_user)
    assert Schedule in site._registry
    assert "nightly" in client.get("/admin/jobs/schedule/").content.decode()
    scheduled = client.get("/admin/jobs/job/?launch_type__exact=scheduled")
    assert list(scheduled.context["cl"].result_list) == [Job.objects.get(pk=fired.job_id)]


def test_the_admin_refuses_a_bad_expression_and_plans_a_good_one(team, user):
    admin_user = make_user("root")
    admin_user.is_staff = admin_user.is_superuser = True
    admin_user.save()
    client = Client()
    client.force_login(admin_user)
    form = {
        "name": "from admin",
        "team": team.pk,
        "kind": "noop",
        "params": "{}",
        "hardware": "{}",
        "cron": "0 3 * *",
        "time_zone": "UTC",
        "enabled": "on",
        "created_by": user.pk,
    }
    refused = client.post("/admin/jobs/schedule/add/", form)
    assert refused.status_code == 200 and "Five fields" in refused.content.decode()
    client.post("/admin/jobs/schedule/add/", {**form, "cron": "0 3 * * *"})
    schedule = Schedule.objects.get()
    assert schedule.next_run_at is not None and schedule.next_run_at.hour == 3
