"""Schedules: check a cron expression and its time zone, say when it next fires, fire the
due ones (the beat task ``jobs.fire_schedules``, on the control queue).

Guarantees (docs/schedules.md):

- **Once per due run, whatever the number of beats.** A beat claims a due row with a
  conditional UPDATE (``WHERE id = … AND enabled AND next_run_at = <the value it read>``)
  that also moves ``next_run_at`` on; the claim, the job and the record of the outcome
  are one transaction. A second beat that read the same row blocks on the first one's
  row lock, then finds ``next_run_at`` changed and updates nothing: it does not fire.
- **A missed window fires once.** The next run is computed from *now*, not from the run
  that was due, so a beat that was down for hours fires a schedule once on its return,
  then waits for the next time the expression names.
- **The same door as a person.** The job goes through ``submit_job`` as the schedule's
  owner (``created_by``) with launch type "scheduled": team access, parameter caps, the
  timeout limit and queue routing apply as they would to a manual launch.
- **Capped.** A team has at most ROCPATH_SCHEDULES_PER_TEAM_MAX enabled schedules, none
  firing more often than every ROCPATH_SCHEDULE_MIN_PERIOD_S; a fire past the submit rate
  (ROCPATH_THROTTLE_SUBMIT: the team's scheduled jobs in its window, and the owner's own
  allowance, shared with the API and the form) is skipped and recorded like a refusal.
  Without these, sixty every-minute schedules made sixty jobs a minute, past every throttle.
- **A refusal is recorded, never raised.** A submission refused (or one that fails for
  another reason) is written to ``last_error``, counted in ``consecutive_failures``, and
  the schedule keeps its next run: it is never disabled behind anyone's back. The page
  shows it, ``stopped_schedules`` lists it, and ``schedule_refused`` announces it.

Time zones and DST follow cronsim (Debian cron's rules): an expression with a fixed
minute and hour ("30 2 * * *") is read in wall-clock time, fires at the first minute
that exists when its time falls in a spring-forward gap, and once (the first) when a
fall-back repeats it; an expression whose minute or hour is a wildcard or step
("30 * * * *") fires on real instants, so an hour a spring-forward removes is not run
and both hours a fall-back gives are.
"""

from __future__ import annotations

import logging
import zoneinfo
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from itertools import pairwise
from typing import Any

from cronsim import CronSim, CronSimError
from django.conf import settings
from django.db import transaction
from django.db.models import F, Q, QuerySet
from django.dispatch import Signal
from django.utils import timezone
from rest_framework.settings import api_settings

from jobs.api.throttles import SubmitThrottle, take_submit_allowance
from jobs.choices import LaunchType
from jobs.models import Job, Schedule
from jobs.services.submit import Submission, SubmissionError, check_submission, submit_job

logger = logging.getLogger(__name__)

FIRE_TASK = "jobs.fire_schedules"  # jobs/tasks.py; on the beat, control queue
FIRE_BATCH = 200  # at most this many schedules a beat; the rest are due the next beat
CRON_FIELDS = ("minute", "hour", "day-of-month", "month", "day-of-week")
CRON_MAX_LENGTH = 200  # Schedule.cron's max_length
# Fire times looked at for the shortest gap: a tight pair ("0,1 3 * * *") repeats daily or
# with the day fields, so it shows among the first few; more is cheap insurance.
PERIOD_SAMPLES = 32

# Sent after commit with schedule_id (int), error (str) and failures (int, in a row) when
# a due schedule's submission was refused: its job was not made.
schedule_refused = Signal()


# --- checking -------------------------------------------------------------------------
@lru_cache(maxsize=1)
def time_zones() -> frozenset[str]:
    """The IANA names this host's tz database knows (read once: it scans the files)."""
    return frozenset(zoneinfo.available_timezones())


def time_zone_errors(name: object) -> list[str]:
    if not isinstance(name, str) or not name:
        return ["Give an IANA time zone name, e.g. Europe/Berlin or UTC."]
    # A lookup in the known names, never ZoneInfo(name) on what was sent: that reads a
    # file named by the input.
    if name not in time_zones():
        return [f"Unknown time zone {name[:64]!r}: give an IANA name, e.g. Europe/Berlin or UTC."]
    return []


def cron_errors(expr: object) -> list[str]:
    """What is wrong with a five-field cron expression, as the form and the API say it."""
    if not isinstance(expr, str) or not expr.strip():
        return [f"Give a cron expression of five fields: {' '.join(CRON_FIELDS)}."]
    if len(expr) > CRON_MAX_LENGTH:
        return [f"At most {CRON_MAX_LENGTH} characters."]
    parts = expr.split()
    if len(parts) != len(CRON_FIELDS):
        return [
            f"Five fields ({' '.join(CRON_FIELDS)}), not {len(parts)}: e.g. '0 3 * * *' "
            "is 03:00 every day."
        ]
    try:
        next(CronSim(expr, datetime.now(UTC)))
    except CronSimError as exc:
        return [f"{exc} field in {expr!r}."]
    except StopIteration:
        return [f"{expr!r} names no time in the next 50 years."]
    return []


def schedule_errors(cron: object, time_zone: object) -> dict[str, list[str]]:
    """Field errors of a schedule's timing, in SubmissionError's shape."""
    errors = {}
    if problems := cron_errors(cron):
        errors["cron"] = problems
    if problems := time_zone_errors(time_zone):
        errors["time_zone"] = problems
    if not errors and (problems := period_errors(str(cron), str(time_zone))):
        errors["cron"] = problems
    return errors


def period_errors(cron: str, time_zone: str, now: datetime | None = None) -> list[str]:
    """Refuse an expression that fires more often than ROCPATH_SCHEDULE_MIN_PERIOD_S: each
    fire is a job, and a schedule is not a way around the submit rate."""
    minimum = settings.ROCPATH_SCHEDULE_MIN_PERIOD_S
    moment: datetime | None = now or timezone.now()
    times = []
    for _ in range(PERIOD_SAMPLES):
        moment = next_run(cron, time_zone, moment) if moment else None
        if moment is None:
            break
        times.append(moment)
    gaps = [(later - earlier).total_seconds() for earlier, later in pairwise(times)]
    if gaps and (shortest := min(gaps)) < minimum:
        return [
            f"{cron!r} fires {int(shortest)} s apart at its closest: at most once every "
            f"{minimum} s (ROCPATH_SCHEDULE_MIN_PERIOD_S), e.g. '*/{max(1, minimum // 60)} "
            "* * * *'."
        ]
    return []


# --- timing ---------------------------------------------------------------------------
def next_run(cron: str, time_zone: str, after: datetime) -> datetime | None:
    """The first time strictly after ``after`` that the expression names in the zone, in
    UTC; None when there is none (cronsim looks 50 years ahead).

    Compared in UTC: two datetimes of the same zone compare by wall clock, fold ignored,
    and on a fall-back day cronsim may hand back the first 02:30 to a caller already past
    it (in the second 02:xx hour). Such a time is passed over, so it is never fired twice.
    """
    zone = zoneinfo.ZoneInfo(time_zone)
    after_utc = after.astimezone(UTC)
    times = CronSim(cron, after_utc.astimezone(zone))
    for _ in range(4):  # at most one candidate is behind (the fold above); a margin
        try:
            candidate = next(times).astimezone(UTC)
        except StopIteration:
            return None
        if candidate > after_utc:
            return candidate
    raise CronSimError(f"no time after {after_utc.isoformat()} for {cron!r} in {time_zone}")


def plan(schedule: Schedule, now: datetime | None = None) -> None:
    """Set the next run from now (unsaved): a schedule saved, edited or enabled starts
    afresh, and a disabled one has none, so it never fires and enabling it later does
    not fire what it missed meanwhile."""
    now = now or timezone.now()
    schedule.next_run_at = (
        next_run(schedule.cron, schedule.time_zone, now) if schedule.enabled else None
    )


def job_of(schedule: Schedule) -> dict[str, Any]:
    """The submission a schedule stands for, as check_submission and submit_job take it."""
    return {
        "kind": schedule.kind,
        "params": schedule.params,
        "team": schedule.team if schedule.team_id else None,
        "project": schedule.project,
        "hardware": schedule.hardware,
        "timeout_s": schedule.timeout_s,
    }


def check_schedule(schedule: Schedule, user: Any) -> Submission:
    """The checks a schedule passes before it is saved: its timing, and its job as
    ``user`` would submit it now. Raises SubmissionError naming every field's problem."""
    errors = schedule_errors(schedule.cron, schedule.time_zone)
    if not (schedule.name or "").strip():
        errors["name"] = ["Give the schedule a name."]
    checked = None
    try:
        checked = check_submission(user=user, **job_of(schedule))
    except SubmissionError as exc:
        errors = {**exc.errors, **errors}
    if errors:
        raise SubmissionError(errors)
    assert checked is not None
    return checked


def save_schedule(schedule: Schedule, *, user: Any, now: datetime | None = None) -> Schedule:
    """Check, plan and save a new or edited schedule: the one way the page and the API
    write one. Its jobs are submitted as whoever saved it last (``created_by``), with
    that member's access: a schedule whose owner left the team is mended by a member
    saving it again, not recreated."""
    checked = check_schedule(schedule, user)
    schedule.team = checked.team  # the project's, or the user's one team when none was named
    schedule.created_by = user
    plan(schedule, now)
    with transaction.atomic():
        if schedule.enabled:
            _check_team_cap(schedule)
        schedule.save()
    return schedule


def _check_team_cap(schedule: Schedule) -> None:
    """Refuse one enabled schedule past ROCPATH_SCHEDULES_PER_TEAM_MAX: the team's row is
    locked first, so two saves at once cannot both take the last place."""
    cap = settings.ROCPATH_SCHEDULES_PER_TEAM_MAX
    type(schedule.team).objects.select_for_update().filter(pk=schedule.team_id).first()
    enabled = (
        Schedule.objects.filter(team_id=schedule.team_id, enabled=True)
        .exclude(pk=schedule.pk)
        .count()
    )
    if enabled >= cap:
        raise SubmissionError(
            {
                "enabled": [
                    f"The team has {enabled} enabled schedules: at most {cap} enabled "
                    "schedules a team (ROCPATH_SCHEDULES_PER_TEAM_MAX). Disable or delete "
                    "one first, or save this one disabled."
                ]
            }
        )


def local_time(schedule: Schedule, moment: datetime | None) -> datetime | None:
    """A moment in the schedule's own zone, as its page shows it."""
    if moment is None:
        return None
    return moment.astimezone(zoneinfo.ZoneInfo(schedule.time_zone))


# --- firing ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Fired:
    """What one claimed schedule came to: a job, or the reason there is none."""

    schedule_id: int
    job_id: int | None
    error: str = ""


def due_schedules(now: datetime | None = None) -> list[Schedule]:
    """The enabled schedules whose next run has come, the longest waiting first."""
    now = now or timezone.now()
    return list(
        Schedule.objects.filter(enabled=True, next_run_at__lte=now).order_by("next_run_at", "id")[
            :FIRE_BATCH
        ]
    )


def fire_schedule(schedule: Schedule, now: datetime | None = None) -> Fired | None:
    """Claim a due schedule as read and submit its job; None when another beat (or an
    edit, or a disable) moved the row first. The claim, the job and the record of how it
    went commit together: a job is never made without its claim, nor a claim kept
    without its outcome written."""
    now = now or timezone.now()
    seen = schedule.next_run_at
    try:
        upcoming, plan_error = next_run(schedule.cron, schedule.time_zone, now), ""
    except (CronSimError, ValueError, zoneinfo.ZoneInfoNotFoundError) as exc:
        # A row written around save_schedule (a bad value in the database): it stops,
        # saying why, instead of being tried on every beat.
        upcoming, plan_error = None, f"cannot compute the next run: {exc}"
    with transaction.atomic():
        claimed = Schedule.objects.filter(pk=schedule.pk, enabled=True, next_run_at=seen).update(
            next_run_at=upcoming, last_run_at=now
        )
        if not claimed:
            return None
        # Read again under the claim's row lock: what fires is the row as it is now.
        schedule = Schedule.objects.select_related("team", "project", "created_by").get(
            pk=schedule.pk
        )
        job, error = None, plan_error
        owner = schedule.created_by
        if owner is None or not owner.is_active:
            error = "its owner's account is gone or disabled: nobody to submit the job as"
        elif over := over_budget(schedule, owner):
            error = over
        else:
            try:
                with transaction.atomic():  # a failure here leaves the claim standing
                    job = submit_job(
                        user=owner,
                        **job_of(schedule),
                        launch_type=LaunchType.SCHEDULED,
                        schedule=schedule,
                    )
            except SubmissionError as exc:
                error = f"refused: {exc}"
            except Exception as exc:  # a bug must not fire the schedule on every beat
                logger.exception("schedule %s: the submission failed", schedule.pk)
                error = f"the submission failed: {type(exc).__name__}: {exc}"
        if job is not None:
            Schedule.objects.filter(pk=schedule.pk).update(
                last_job=job, last_error=plan_error, consecutive_failures=0
            )
        else:
            Schedule.objects.filter(pk=schedule.pk).update(
                last_error=error[:4000], consecutive_failures=F("consecutive_failures") + 1
            )
            _announce_refused(schedule.pk, error, schedule.consecutive_failures + 1)
    if error:
        logger.warning("schedule %s (%s): %s", schedule.pk, schedule.name, error)
    return Fired(schedule.pk, job.pk if job else None, error)


def over_budget(schedule: Schedule, owner: Any) -> str:
    """Why this fire is skipped, or "": the submit rate (ROCPATH_THROTTLE_SUBMIT) bounds
    what a team's schedules make together in its window, and each fire takes from its
    owner's own allowance, the one their API and form submissions use. Without it many
    schedules made jobs past any throttle."""
    rate = api_settings.DEFAULT_THROTTLE_RATES.get(SubmitThrottle.scope)
    if not rate:
        return ""
    allowed, window = SubmitThrottle().parse_rate(rate)
    made = Job.objects.filter(
        team_id=schedule.team_id,
        launch_type=LaunchType.SCHEDULED,
        created_at__gt=timezone.now() - timedelta(seconds=window),
    ).count()
    if made >= allowed:
        return (
            f"skipped: the team's schedules made {made} jobs in the last {window} s, "
            f"the submit rate ({rate}, ROCPATH_THROTTLE_SUBMIT)"
        )
    if (wait := take_submit_allowance(owner)) is not None:
        return (
            f"skipped: its owner is past the submit rate ({rate}, ROCPATH_THROTTLE_SUBMIT), "
            f"shared with their own submissions; free again in {wait} s"
        )
    return ""


def fire_due_schedules(now: datetime | None = None) -> list[Fired]:
    """The beat task's body: fire every due schedule, each in its own transaction, so a
    schedule that cannot be fired never keeps the others from firing."""
    now = now or timezone.now()
    fired = []
    for schedule in due_schedules(now):
        try:
            outcome = fire_schedule(schedule, now)
        except Exception:  # the database went away mid-claim: the claim rolled back too
            logger.exception("schedule %s: not fired, tried again next beat", schedule.pk)
            continue
        if outcome is not None:
            fired.append(outcome)
    return fired


def _announce_refused(schedule_id: int, error: str, failures: int) -> None:
    def send() -> None:
        for receiver, result in schedule_refused.send_robust(
            sender="jobs.Schedule", schedule_id=schedule_id, error=error, failures=failures
        ):
            if isinstance(result, Exception):
                logger.error(
                    "schedule %s: a schedule-refused receiver failed (%s): %r",
                    schedule_id,
                    receiver,
                    result,
                    exc_info=result,
                )

    transaction.on_commit(send)


# --- what alerts read -----------------------------------------------------------------
@dataclass(frozen=True)
class Stopped:
    """An enabled schedule that is not making jobs, and why."""

    schedule: Schedule
    reason: str  # "overdue", "refused" or "no next run"
    detail: str


def overdue(now: datetime | None = None) -> Q:
    """Enabled schedules due longer ago than ROCPATH_SCHEDULE_LATE_S: nothing fires them
    (beat or the control worker is down, or the queue is stuck)."""
    now = now or timezone.now()
    late = now - timedelta(seconds=settings.ROCPATH_SCHEDULE_LATE_S)
    return Q(enabled=True, next_run_at__lt=late)


def stopped_schedules(
    queryset: QuerySet[Schedule] | None = None, now: datetime | None = None
) -> list[Stopped]:
    """Enabled schedules that stopped running: overdue (nothing fires them), refused (their
    last submission made no job) or with no next run (their expression names no more
    times). What an alert on "a schedule that stopped running" reads; a failed *job* of a
    schedule comes through job_finished (its job's ``schedule_id`` is set)."""
    now = now or timezone.now()
    rows = (queryset if queryset is not None else Schedule.objects.all()).filter(
        overdue(now)
        | Q(enabled=True, consecutive_failures__gt=0)
        | Q(enabled=True, next_run_at__isnull=True)
    )
    stopped = []
    for schedule in rows.select_related("team", "project"):
        if schedule.next_run_at is None:
            stopped.append(Stopped(schedule, "no next run", schedule.last_error))
        elif schedule.consecutive_failures:
            detail = f"{schedule.consecutive_failures} in a row: {schedule.last_error}"
            stopped.append(Stopped(schedule, "refused", detail))
        else:
            stopped.append(
                Stopped(schedule, "overdue", f"due at {schedule.next_run_at.isoformat()}")
            )
    return stopped
