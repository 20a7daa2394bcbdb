"""Schedules fire once per due run, through submit, on the times their zone's clock names."""

from __future__ import annotations

import subprocess
import sys
import threading
import zoneinfo
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.utils import timezone

from jobs.choices import LaunchType
from jobs.models import Job, Schedule
from jobs.services import schedules
from jobs.services.schedules import (
    cron_errors,
    due_schedules,
    fire_due_schedules,
    fire_schedule,
    next_run,
    save_schedule,
    schedule_refused,
    stopped_schedules,
    time_zone_errors,
)
from jobs.services.submit import SubmissionError
from stack.kinds.noop import KIND as NOOP
from teams.choices import Role
from teams.models import Membership
from tests.factories import add_member, make_team, make_user
from tests.workers import ROOT, worker_env

BERLIN = zoneinfo.ZoneInfo("Europe/Berlin")


def berlin(*args: int) -> datetime:
    return datetime(*args, tzinfo=BERLIN)


def runs(cron: str, start: datetime, count: int, zone: str = "Europe/Berlin") -> list[str]:
    """The next ``count`` runs after ``start``, as the zone's clock shows them."""
    shown, moment = [], start
    for _ in range(count):
        moment = next_run(cron, zone, moment)
        shown.append(moment.astimezone(zoneinfo.ZoneInfo(zone)).strftime("%d %H:%M %Z"))
    return shown


def due_schedule(user, team, **fields) -> Schedule:
    """A schedule saved the one way, then made due an hour ago."""
    fields.setdefault("cron", "*/5 * * * *")
    schedule = save_schedule(
        Schedule(name=fields.pop("name", "nightly"), team=team, kind=NOOP.name, **fields),
        user=user,
    )
    Schedule.objects.filter(pk=schedule.pk).update(next_run_at=timezone.now() - timedelta(hours=1))
    schedule.refresh_from_db()
    return schedule


# --- checking ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("cron", "said"),
    [
        ("61 * * * *", "Bad minute field in '61 * * * *'."),
        ("* * *", "Five fields (minute hour day-of-month month day-of-week), not 3"),
        ("0 0 31 2 *", "Bad day-of-month field"),
        ("0 0 * * * *", "not 6"),
        ("", "Give a cron expression of five fields"),
    ],
)
def test_a_bad_cron_expression_is_refused_naming_what_is_wrong(cron, said):
    assert said in cron_errors(cron)[0]


def test_good_cron_expressions_pass():
    for cron in ("0 3 * * *", "*/15 * * * MON-FRI", "0 0 L * *", "30 2 * * SUN#1"):
        assert cron_errors(cron) == []


def test_a_time_zone_must_be_an_iana_name_and_is_never_read_as_a_path():
    assert time_zone_errors("Europe/Berlin") == [] and time_zone_errors("UTC") == []
    assert "Unknown time zone 'Mars/Olympus'" in time_zone_errors("Mars/Olympus")[0]
    assert "Unknown time zone" in time_zone_errors("../../../etc/passwd")[0]


def test_saving_a_schedule_checks_its_timing_and_its_job_together(user, team):
    bad = Schedule(name="", team=team, kind=NOOP.name, params={"seconds": "x"}, cron="0 25 * * *")
    with pytest.raises(SubmissionError) as caught:
        save_schedule(bad, user=user)
    assert set(caught.value.errors) == {"name", "cron", "params"}
    assert Schedule.objects.count() == 0


def test_a_saved_schedule_has_its_next_run_from_now_in_utc(user, team):
    now = datetime(2027, 1, 15, 12, 0, tzinfo=UTC)
    schedule = save_schedule(
        Schedule(name="n", team=team, kind=NOOP.name, cron="0 3 * * *", time_zone="Asia/Tokyo"),
        user=user,
        now=now,
    )
    assert schedule.next_run_at == datetime(2027, 1, 15, 18, 0, tzinfo=UTC)  # 03:00 JST
    assert schedule.created_by == user


# --- DST ---------------------------------------------------------------------------------
def test_the_hour_a_spring_forward_removes_is_not_run():
    # Europe/Berlin, 28 March 2027: 02:00 CET becomes 03:00 CEST.
    assert runs("30 * * * *", berlin(2027, 3, 28, 0, 0), 4) == [
        "28 00:30 CET",
        "28 01:30 CET",
        "28 03:30 CEST",
        "28 04:30 CEST",
    ]


def test_a_daily_time_inside_the_gap_runs_once_at_the_first_minute_that_exists():
    assert runs("30 2 * * *", berlin(2027, 3, 27, 0, 0), 3) == [
        "27 02:30 CET",
        "28 03:00 CEST",
        "29 02:30 CEST",
    ]


def test_a_daily_time_a_fall_back_repeats_runs_once():
    # 31 October 2027: 03:00 CEST becomes 02:00 CET, so 02:30 happens twice.
    assert runs("30 2 * * *", berlin(2027, 10, 30, 12, 0), 3) == [
        "31 02:30 CEST",
        "01 02:30 CET",
        "02 02:30 CET",
    ]


def test_a_daily_time_is_not_run_again_from_inside_the_repeated_hour():
    # A beat that fired at the first 02:30 (or came back during the second 02:xx hour).
    after = datetime(2027, 10, 31, 1, 10, tzinfo=UTC)  # 02:10 CET, the second 02:10
    assert next_run("30 2 * * *", "Europe/Berlin", after) == datetime(
        2027, 11, 1, 1, 30, tzinfo=UTC
    )


def test_an_hourly_schedule_runs_in_both_real_hours_a_fall_back_gives():
    assert runs("30 * * * *", berlin(2027, 10, 31, 1, 0), 3) == [
        "31 01:30 CEST",
        "31 02:30 CEST",
        "31 02:30 CET",
    ]


# --- firing ------------------------------------------------------------------------------
def test_a_due_schedule_fires_one_job_through_submit_as_its_owner(
    user, team, no_enqueue, django_capture_on_commit_callbacks
):
    schedule = due_schedule(user, team, params={"seconds": 0}, timeout_s=30)
    now = timezone.now()
    with django_capture_on_commit_callbacks(execute=True):
        [fired] = fire_due_schedules(now)
    job = Job.objects.get()
    assert fired.job_id == job.pk and fired.error == ""
    assert job.launch_type == LaunchType.SCHEDULED and job.schedule == schedule
    assert job.created_by == user and job.team == team and job.timeout_s == 30
    assert job.params["seconds"] == 0
    assert no_enqueue == [job.pk]  # queued like any other job
    schedule.refresh_from_db()
    assert schedule.last_job == job and schedule.last_run_at == now
    assert schedule.next_run_at > now and schedule.last_error == ""


def test_windows_missed_for_hours_fire_once_not_once_each(user, team, no_enqueue):
    schedule = due_schedule(user, team, cron="*/5 * * * *")  # due an hour ago: 12 missed
    now = timezone.now()
    assert len(fire_due_schedules(now)) == 1
    assert fire_due_schedules(now) == []
    assert Job.objects.filter(schedule=schedule).count() == 1
    schedule.refresh_from_db()
    assert now < schedule.next_run_at <= now + timedelta(minutes=5)


def test_a_disabled_schedule_never_fires(user, team, no_enqueue):
    schedule = due_schedule(user, team)
    schedule.enabled = False
    save_schedule(schedule, user=user)
    assert schedule.next_run_at is None
    # Even a row left due by hand (an admin's edit) is not fired while disabled.
    Schedule.objects.filter(pk=schedule.pk).update(next_run_at=timezone.now() - timedelta(days=1))
    assert fire_due_schedules() == [] and Job.objects.count() == 0


def test_a_schedule_disabled_after_the_beat_read_it_does_not_fire(user, team, no_enqueue):
    schedule = due_schedule(user, team)
    [read] = due_schedules()
    Schedule.objects.filter(pk=schedule.pk).update(enabled=False)
    assert fire_schedule(read) is None and Job.objects.count() == 0


def test_a_refused_submission_is_recorded_and_the_schedule_keeps_going(
    user, team, no_enqueue, django_capture_on_commit_callbacks
):
    heard = []
    schedule_refused.connect(lambda **kw: heard.append(kw), weak=False, dispatch_uid="t")
    try:
        schedule = due_schedule(user, team)
        Membership.objects.filter(user=user, team=team).update(role=Role.VIEWER)
        now = timezone.now()
        with django_capture_on_commit_callbacks(execute=True):
            [fired] = fire_due_schedules(now)
        assert fired.job_id is None
        assert fired.error == "refused: team: You cannot submit jobs for this team."
        schedule.refresh_from_db()
        assert schedule.last_error == fired.error and schedule.consecutive_failures == 1
        assert schedule.next_run_at > now and schedule.enabled  # kept going
        assert heard == [
            {
                "signal": schedule_refused,
                "sender": "jobs.Schedule",
                "schedule_id": schedule.pk,
                "error": fired.error,
                "failures": 1,
            }
        ]

        # Fixed (the owner can submit again): the next due run makes its job, the count resets.
        Membership.objects.filter(user=user, team=team).update(role=Role.MEMBER)
        Schedule.objects.filter(pk=schedule.pk).update(next_run_at=now)
        [fired] = fire_due_schedules(now + timedelta(seconds=1))
        schedule.refresh_from_db()
        assert fired.job_id is not None and schedule.last_job_id == fired.job_id
        assert schedule.consecutive_failures == 0 and schedule.last_error == ""
    finally:
        schedule_refused.disconnect(dispatch_uid="t")


def test_the_servers_caps_apply_to_a_scheduled_job(user, team, no_enqueue, settings):
    schedule = due_schedule(user, team, timeout_s=600)
    settings.ROCPATH_JOB_TIMEOUT_MAX_S = 300  # lowered after the schedule was saved
    [fired] = fire_due_schedules()
    assert fired.error == "refused: timeout_s: Must be between 1 and 300 seconds."
    assert Job.objects.count() == 0
    schedule.refresh_from_db()
    assert schedule.consecutive_failures == 1


def test_a_schedule_whose_owner_is_gone_records_it_and_submits_nothing(user, team, no_enqueue):
    schedule = due_schedule(user, team)
    user.delete()
    [fired] = fire_due_schedules()
    assert "owner's account is gone or disabled" in fired.error
    assert Job.objects.count() == 0
    schedule.refresh_from_db()
    assert schedule.last_error == fired.error


def test_one_broken_row_stops_saying_why_and_the_others_still_fire(user, team, no_enqueue):
    broken = due_schedule(user, team, name="a broken one")
    healthy = due_schedule(user, team, name="healthy")
    Schedule.objects.filter(pk=broken.pk).update(time_zone="Nowhere/Else")  # around the checks
    fired = {f.schedule_id: f for f in fire_due_schedules()}
    assert fired[healthy.pk].job_id is not None
    broken.refresh_from_db()
    assert broken.next_run_at is None and "cannot compute the next run" in broken.last_error
    assert fire_due_schedules() == []  # not tried again on every beat


def test_stopped_schedules_lists_the_overdue_the_refused_and_those_without_a_next_run(
    user, team, settings
):
    settings.ROCPATH_SCHEDULE_LATE_S = 300
    now = timezone.now()
    healthy = due_schedule(user, team, name="healthy")
    overdue = due_schedule(user, team, name="overdue")
    refused = due_schedule(user, team, name="refused")
    ended = due_schedule(user, team, name="ended")
    off = due_schedule(user, team, name="off")
    Schedule.objects.filter(pk=healthy.pk).update(next_run_at=now - timedelta(seconds=30))
    Schedule.objects.filter(pk=refused.pk).update(
        next_run_at=now + timedelta(minutes=5), consecutive_failures=3, last_error="refused: x"
    )
    Schedule.objects.filter(pk=ended.pk).update(next_run_at=None)
    Schedule.objects.filter(pk=off.pk).update(enabled=False)
    stopped = {s.schedule.name: (s.reason, s.detail) for s in stopped_schedules(now=now)}
    assert stopped == {
        "overdue": (
            "overdue",
            f"due at {Schedule.objects.get(pk=overdue.pk).next_run_at.isoformat()}",
        ),
        "refused": ("refused", "3 in a row: refused: x"),
        "ended": ("no next run", ""),
    }


def test_the_beat_fires_schedules_on_the_control_queue(settings):
    [entry] = [
        e for e in settings.CELERY_BEAT_SCHEDULE.values() if e["task"] == schedules.FIRE_TASK
    ]
    assert entry["options"]["queue"] == settings.ROCPATH_CONTROL_QUEUE
    assert entry["schedule"] == float(settings.ROCPATH_SCHEDULE_INTERVAL_S)
    assert (
        settings.CELERY_TASK_ROUTES[schedules.FIRE_TASK]["queue"] == settings.ROCPATH_CONTROL_QUEUE
    )


# --- two beats at once -------------------------------------------------------------------
@pytest.mark.django_db(transaction=True)
def test_two_beats_that_read_the_same_due_rows_fire_each_once(no_enqueue):
    team = make_team()
    owner = make_user()
    add_member(team, owner, Role.MEMBER)
    rows = [due_schedule(owner, team, name=f"s{i}") for i in range(30)]
    now = timezone.now()
    both_read = threading.Barrier(2)
    outcomes: list[list] = [[], []]

    def beat(n: int) -> None:
        try:
            due = due_schedules(now)
            both_read.wait(timeout=30)  # each has read every row before either claims one
            outcomes[n] = [fire_schedule(s, now) for s in due]
        finally:
            connection.close()

    threads = [threading.Thread(target=beat, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    won = [o for beat_outcomes in outcomes for o in beat_outcomes if o is not None]
    lost = [o for beat_outcomes in outcomes for o in beat_outcomes if o is None]
    assert len(won) == len(rows) and len(lost) == len(rows)  # one claim each, one refused
    assert sorted(f.schedule_id for f in won) == sorted(s.pk for s in rows)
    per_schedule = [Job.objects.filter(schedule=s).count() for s in rows]
    assert per_schedule == [1] * len(rows)


BEAT = """
import os, sys, time, django
django.setup()
from jobs.tasks import fire_schedules
ready, go = sys.argv[1], sys.argv[2]
open(ready, "w").close()
while not os.path.exists(go):
    time.sleep(0.005)
print(len(fire_schedules()))
"""


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.process
def test_two_beat_processes_at_once_make_one_job_per_due_schedule(settings, tmp_path):
    team = make_team()
    owner = make_user()
    add_member(team, owner, Role.MEMBER)
    rows = [due_schedule(owner, team, name=f"s{i}") for i in range(60)]
    # The jobs are queued on a broker in the process' memory: only the rows matter here.
    env = worker_env(settings, CELERY_BROKER_URL="memory://")
    go = tmp_path / "go"
    beats = [
        subprocess.Popen(
            [sys.executable, "-c", BEAT, str(tmp_path / f"ready{n}"), str(go)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(2)
    ]
    for n, beat in enumerate(beats):
        while not (tmp_path / f"ready{n}").exists():
            assert beat.poll() is None, beat.communicate()[1][-3000:]
            threading.Event().wait(0.01)
    go.touch()
    made = []
    for beat in beats:
        out, err = beat.communicate(timeout=120)
        assert beat.returncode == 0, err[-3000:]
        made.append(int(out.strip().splitlines()[-1]))
    assert sum(made) == len(rows)
    assert [Job.objects.filter(schedule=s).count() for s in rows] == [1] * len(rows)
