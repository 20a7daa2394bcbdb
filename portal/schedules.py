"""The schedules pages: list, create, edit, enable or disable, delete, and each one's jobs.

What a schedule may be is jobs.services.schedules' to say (save_schedule); these views
collect the input; the templates show times in the schedule's own zone (the tz filter),
as its cron reads them.
"""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from jobs import services
from jobs.access import jobs_for
from jobs.api.errors import bound_errors
from jobs.models import Schedule
from jobs.models.schedule import EDITABLE_FIELDS
from jobs.services.schedules import time_zones
from portal.forms import ScheduleForm
from teams.access import can_write, projects_for, team_ids, writable_team_ids
from teams.models import Team

RECENT_JOBS = 20  # a schedule's page shows its newest jobs; the API pages through them all


def _schedules(request: HttpRequest):
    return Schedule.objects.filter(team_id__in=team_ids(request.user)).select_related(
        "team", "project", "last_job", "created_by"
    )


def _schedule(request: HttpRequest, pk: int) -> Schedule:
    return get_object_or_404(_schedules(request), pk=pk)


@login_required
def schedule_list(request: HttpRequest) -> HttpResponse:
    schedules = list(_schedules(request))
    stopped = {s.schedule.pk: s for s in services.stopped_schedules(_schedules(request))}
    for schedule in schedules:
        schedule.stopped = stopped.get(schedule.pk)
    return render(
        request,
        "portal/schedules.html",
        {"schedules": schedules, "can_create": bool(writable_team_ids(request.user))},
    )


@login_required
def schedule_detail(request: HttpRequest, pk: int) -> HttpResponse:
    schedule = _schedule(request, pk)
    stopped = services.stopped_schedules(Schedule.objects.filter(pk=schedule.pk))
    return render(
        request,
        "portal/schedule_detail.html",
        {
            "schedule": schedule,
            "stopped": stopped[0] if stopped else None,
            "jobs": jobs_for(request.user).filter(schedule=schedule)[:RECENT_JOBS],
            "params_json": json.dumps(schedule.params, indent=2),
            "hardware_json": json.dumps(schedule.hardware, indent=2),
            "can_write": can_write(request.user, schedule.team_id),
        },
    )


@login_required
def schedule_new(request: HttpRequest) -> HttpResponse:
    return _edit(request, Schedule())


def _writable(request: HttpRequest, pk: int) -> Schedule | HttpResponse:
    """The schedule, or (for a viewer) the way back to its page, saying why."""
    schedule = _schedule(request, pk)
    if can_write(request.user, schedule.team_id):
        return schedule
    messages.error(request, "Viewers cannot change or delete schedules.")
    return redirect("portal:schedule-detail", pk=pk)


@login_required
def schedule_edit(request: HttpRequest, pk: int) -> HttpResponse:
    schedule = _writable(request, pk)
    return _edit(request, schedule) if isinstance(schedule, Schedule) else schedule


def _edit(request: HttpRequest, schedule: Schedule) -> HttpResponse:
    teams = Team.objects.filter(pk__in=writable_team_ids(request.user))
    projects = projects_for(request.user).filter(team__in=teams)
    initial = {field: getattr(schedule, field) for field in EDITABLE_FIELDS} if schedule.pk else {}
    if schedule.pk:
        initial["params"] = json.dumps(schedule.params, indent=2)
        initial["hardware"] = json.dumps(schedule.hardware)
    form = ScheduleForm(request.POST or None, teams=teams, projects=projects, initial=initial)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        for field in EDITABLE_FIELDS:
            setattr(schedule, field, data.get(field))
        created = schedule.pk is None
        try:
            services.save_schedule(schedule, user=request.user)
        except services.SubmissionError as exc:
            for field, errors in bound_errors(exc.errors).items():
                for error in errors:
                    form.add_error(field if field in form.fields else None, error)
        else:
            messages.success(
                request, f"Schedule {schedule.name} {'created' if created else 'saved'}."
            )
            return redirect("portal:schedule-detail", pk=schedule.pk)
    return render(
        request,
        "portal/schedule_form.html",
        {"form": form, "schedule": schedule, "time_zones": sorted(time_zones())},
    )


@login_required
@require_POST
def schedule_toggle(request: HttpRequest, pk: int) -> HttpResponse:
    """Enable or disable: enabling plans the next run from now, so what a disabled
    schedule missed is not fired."""
    schedule = _writable(request, pk)
    if not isinstance(schedule, Schedule):
        return schedule
    schedule.enabled = request.POST.get("enabled") == "1"
    try:
        services.save_schedule(schedule, user=request.user)
    except services.SubmissionError as exc:
        messages.error(request, f"Not saved: {exc}")
    else:
        messages.success(
            request, f"Schedule {schedule.name} {'enabled' if schedule.enabled else 'disabled'}."
        )
    return redirect("portal:schedule-detail", pk=pk)


@login_required
@require_POST
def schedule_delete(request: HttpRequest, pk: int) -> HttpResponse:
    schedule = _writable(request, pk)
    if not isinstance(schedule, Schedule):
        return schedule
    schedule.delete()
    messages.success(request, f"Schedule {schedule.name} deleted; its jobs are kept.")
    return redirect("portal:schedules")
