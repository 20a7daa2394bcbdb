"""The roadmap pages: a project's phases, gates, tasks, checklist, recommendation, report.

The logic is roadmap/'s (gates, criteria, checklist, recommend, report); these views
read it, take the few things a person decides (overrides with a reason, checklist
answers, the team's context, planned dates, the team's own tasks) and render.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from portal.kinds import project_steps
from roadmap.checklist import ANSWERS, QUESTIONS
from roadmap.gates import OVERRIDE_DAYS_DEFAULT, OverrideError, override_gate, revoke_override
from roadmap.models import (
    ChecklistAnswer,
    DecisionContext,
    GateOverride,
    Phase,
    PhaseStatus,
    Task,
    checked_weights,
)
from roadmap.plan import ensure_roadmap
from roadmap.report import markdown, roadmap_document
from teams.access import can_write, projects_for


class WeightsField(forms.CharField):
    """``workload=weight`` pairs, one per line or comma-separated ("gemm bf16=3, gemm int8=0"):
    how much each measured workload weighs in the performance summary; unnamed ones 1."""

    def prepare_value(self, value: Any) -> str:
        if isinstance(value, dict):
            return "\n".join(f"{k}={v:g}" for k, v in value.items())
        return super().prepare_value(value)

    def to_python(self, value: Any) -> dict[str, float]:
        text = super().to_python(value) or ""
        pairs = [item.partition("=") for item in text.replace("\n", ",").split(",")]
        # "name" alone (no "=") is a weight of None, which checked_weights refuses.
        given = {
            name: number if sep else None
            for name, sep, number in pairs
            if name.strip() or number.strip()  # "=3" has no name: refused, not dropped
        }
        return checked_weights(given)


class ContextForm(forms.ModelForm):
    workload_weights = WeightsField(
        required=False,
        label="Workload weights",
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": "gemm bf16=3\ngemm int8=0"}),
        help_text="how much each measured workload (benchmark and precision) weighs in the "
        "performance summary; unnamed ones weigh 1, 0 leaves one out",
    )

    class Meta:
        model = DecisionContext
        fields = DecisionContext.TEAM_FIELDS
        # Django would label them from the names ("Multi gpu", "Current gpu price").
        labels = {
            "time_window_weeks": "Time window (weeks)",
            "engineers": "Engineers",
            "multi_gpu": "Multi-GPU",
            "multi_vendor_fleet": "Multi-vendor fleet",
            "new_cluster": "New cluster",
            "needs_low_level_access": "Needs low-level access",
            "budget_limited": "Budget-limited",
            "current_gpu_price": "Current GPU price",
            "candidate_gpu_price": "Candidate GPU price",
        }


class PhaseForm(forms.ModelForm):
    blocked = forms.BooleanField(required=False)

    class Meta:
        model = Phase
        fields = ["planned_days_min", "planned_days_max", "planned_start", "planned_end"]
        widgets = {
            "planned_start": forms.DateInput(attrs={"type": "date"}),
            "planned_end": forms.DateInput(attrs={"type": "date"}),
        }

    def clean(self):
        data = super().clean()
        low, high = data.get("planned_days_min"), data.get("planned_days_max")
        if low is not None and high is not None and low > high:
            self.add_error("planned_days_max", "Must be at least the minimum.")
        start, end = data.get("planned_start"), data.get("planned_end")
        if start and end and end < start:
            self.add_error("planned_end", "Must not be before the start.")
        return data


def _project(request: HttpRequest, pk: int):
    return get_object_or_404(projects_for(request.user), pk=pk)


def _writable(request: HttpRequest, project) -> bool:
    if can_write(request.user, project.team_id):
        return True
    messages.error(request, "Viewers cannot change the roadmap.")
    return False


def _timeline(doc: dict) -> dict:
    """Bars of planned vs actual days from the first planned or actual start, with a
    dated axis and where today falls."""
    starts = [d for ph in doc["phases"] for d in (ph["planned_start"], ph["actual_start"]) if d]
    origin = min(starts) if starts else timezone.localdate()
    today = timezone.localdate()
    rows, cursor = [], origin
    for ph in doc["phases"]:
        p_start = ph["planned_start"] or cursor
        p_end = ph["planned_end"] or (p_start + dt.timedelta(days=ph["planned_days"][1]))
        cursor = p_end
        a_start, a_end = (
            ph["actual_start"],
            ph["actual_end"] or (today if ph["actual_start"] else None),
        )
        rows.append(
            {
                "phase": ph,
                "planned": ((p_start - origin).days, max((p_end - p_start).days, 1)),
                "actual": ((a_start - origin).days, max((a_end - a_start).days, 1))
                if a_start
                else None,
            }
        )
    span = max(
        [r["planned"][0] + r["planned"][1] for r in rows]
        + [r["actual"][0] + r["actual"][1] for r in rows if r["actual"]]
        + [1]
    )
    for r in rows:
        r["planned_pct"] = (r["planned"][0] * 100 / span, r["planned"][1] * 100 / span)
        r["actual_pct"] = (
            (r["actual"][0] * 100 / span, r["actual"][1] * 100 / span) if r["actual"] else None
        )
    return {"rows": rows, "axis": timeline_axis(origin, span), "today": _pct(today, origin, span)}


def _pct(day: dt.date, origin: dt.date, span: int) -> float | None:
    """Where a day falls along the timeline, in percent; None outside it."""
    pct = (day - origin).days * 100 / span
    return pct if 0 <= pct <= 100 else None


DAY_STEPS = (1, 2, 7, 14)  # days between ticks; beyond a fortnight, months
MONTH_STEPS = (1, 2, 3, 6, 12)
MOST_TICKS = 8  # labels of about 6 characters across the track: more would touch


def timeline_axis(origin: dt.date, span: int) -> list[dict]:
    """Dated ticks under the timeline: bars without dates said how long, not when.

    Ticks fall on whole days, on Mondays or on the first of a month, as few of them as
    keep the labels ("3 Dec", "Jan 2027") apart: at most MOST_TICKS over the span.
    """
    end = origin + dt.timedelta(days=span)
    days: list[dt.date] = []
    label = "{d.day} {d:%b}"
    step = next((s for s in DAY_STEPS if span / s <= MOST_TICKS), None)
    if step is not None:
        day = origin
        if step >= 7:  # from the first Monday: weeks read as weeks
            day += dt.timedelta(days=-origin.weekday() % 7)
        while day <= end:
            days.append(day)
            day += dt.timedelta(days=step)
    else:
        months = next((m for m in MONTH_STEPS if span / 30.4 / m <= MOST_TICKS), 24)
        label = "{d:%b %Y}"
        month = origin.year * 12 + origin.month  # the first of the month after the origin
        while (day := dt.date(month // 12, month % 12 + 1, 1)) <= end:
            if day >= origin and (day.month - 1) % months == 0:
                days.append(day)
            month += 1
    ticks = []
    for d in days:
        pct = (d - origin).days * 100 / span
        # a label at either end is anchored inwards, or the track would cut it in half
        anchor = "start" if pct < 4 else "end" if pct > 96 else "middle"
        ticks.append({"pct": pct, "label": label.format(d=d), "anchor": anchor})
    return ticks


@login_required
def roadmap_page(request: HttpRequest, pk: int) -> HttpResponse:
    project = _project(request, pk)
    doc = roadmap_document(project)
    context = getattr(project, "decision_context", None) or DecisionContext(project=project)
    steps = {p.kind.name for p in project_steps()}
    return render(
        request,
        "portal/roadmap.html",
        {
            "project": project,
            "doc": doc,
            "timeline": _timeline(doc),
            "can_write": can_write(request.user, project.team_id),
            "context_form": ContextForm(instance=context),
            "answers": ANSWERS,
            "questions": QUESTIONS,
            "steps": steps,
            "phases": {p.number: p for p in ensure_roadmap(project)},
        },
    )


@login_required
@require_POST
def roadmap_override(request: HttpRequest, pk: int, number: int) -> HttpResponse:
    project = _project(request, pk)
    if _writable(request, project):
        phase = get_object_or_404(Phase, project=project, number=number)
        try:
            days = request.POST.get("days", "")
            override_gate(
                phase,
                request.POST.get("criterion", ""),
                request.POST.get("reason", ""),
                request.user,
                days=int(days) if days.isascii() and days.isdigit() else OVERRIDE_DAYS_DEFAULT,
            )
            messages.success(request, "Override recorded, with your name, reason and expiry.")
        except OverrideError as exc:
            messages.error(request, f"Not recorded: {exc}.")
    return redirect("portal:project-roadmap", pk=pk)


@login_required
@require_POST
def roadmap_override_revoke(request: HttpRequest, pk: int, override_id: int) -> HttpResponse:
    project = _project(request, pk)
    if _writable(request, project):
        override = get_object_or_404(GateOverride, pk=override_id, phase__project=project)
        try:
            revoke_override(override, request.user)
            messages.success(request, "Override revoked: its criterion counts again.")
        except OverrideError as exc:
            messages.error(request, f"Not revoked: {exc}.")
    return redirect("portal:project-roadmap", pk=pk)


@login_required
@require_POST
def roadmap_checklist(request: HttpRequest, pk: int) -> HttpResponse:
    project = _project(request, pk)
    if _writable(request, project):
        keys = {q.key for q in QUESTIONS}
        question, answer = request.POST.get("question", ""), request.POST.get("answer", "")
        if question not in keys or answer not in (*ANSWERS, ""):
            messages.error(
                request, f"Not recorded: answer one of {', '.join(ANSWERS)} to a known question."
            )
        elif answer == "":
            ChecklistAnswer.objects.filter(project=project, question=question).delete()
            messages.info(
                request, "Answer removed: the data's answer counts again, where there is one."
            )
        else:
            ChecklistAnswer.objects.update_or_create(
                project=project,
                question=question,
                defaults={
                    "answer": answer,
                    "note": request.POST.get("note", "")[:2000],
                    "by": request.user,
                    "at": timezone.now(),
                },
            )
            messages.success(request, "Answer recorded.")
    return redirect(reverse("portal:project-roadmap", args=[pk]) + "#checklist")


@login_required
@require_POST
def roadmap_context(request: HttpRequest, pk: int) -> HttpResponse:
    project = _project(request, pk)
    if _writable(request, project):
        instance = getattr(project, "decision_context", None) or DecisionContext(project=project)
        form = ContextForm(request.POST, instance=instance)
        if form.is_valid():
            form.save()
            messages.success(request, "Context saved; the recommendation reads it.")
        else:
            messages.error(
                request,
                "Not saved: " + "; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items()),
            )
    return redirect("portal:project-roadmap", pk=pk)


@login_required
@require_POST
def roadmap_phase(request: HttpRequest, pk: int, number: int) -> HttpResponse:
    project = _project(request, pk)
    if _writable(request, project):
        phase = get_object_or_404(Phase, project=project, number=number)
        form = PhaseForm(request.POST, instance=phase)
        if form.is_valid():
            phase = form.save(commit=False)
            phase.status = (
                PhaseStatus.BLOCKED if form.cleaned_data["blocked"] else PhaseStatus.NOT_STARTED
            )
            phase.owner = request.user if request.POST.get("take") else phase.owner
            phase.save()
            messages.success(request, f"Phase {number} saved.")
        else:
            messages.error(
                request,
                "Not saved: " + "; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items()),
            )
    return redirect("portal:project-roadmap", pk=pk)


@login_required
@require_POST
def roadmap_task(request: HttpRequest, pk: int, number: int) -> HttpResponse:
    """Add one of the team's own tasks, or mark one done / not done."""
    project = _project(request, pk)
    if _writable(request, project):
        phase = get_object_or_404(Phase, project=project, number=number)
        if title := request.POST.get("title", "").strip():
            Task.objects.create(phase=phase, title=title[:300], order=1000)
            messages.success(request, "Task added.")
        elif task_id := request.POST.get("task"):
            task = get_object_or_404(Task, phase=phase, pk=task_id)
            done = request.POST.get("done") == "1"
            task.done_at, task.done_by = (timezone.now(), request.user) if done else (None, None)
            task.save()
        else:
            messages.error(request, "Give the task a title.")
    return redirect("portal:project-roadmap", pk=pk)


@login_required
def roadmap_report(request: HttpRequest, pk: int, fmt: str = "html") -> HttpResponse:
    """The report for a manager: HTML with print CSS, PDF (WeasyPrint), or Markdown."""
    project = _project(request, pk)
    doc = roadmap_document(project)
    name = f"rocpath-roadmap-{project.team.slug}-{project.pk}"
    if fmt == "md":
        response = HttpResponse(markdown(doc), content_type="text/markdown; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{name}.md"'
        return response
    html = render_to_string(
        "portal/roadmap_report.html", {"doc": doc, "project": project}, request=request
    )
    if fmt == "pdf":
        try:
            from weasyprint import HTML
        except OSError as exc:  # WeasyPrint loads Pango when imported
            return HttpResponse(
                f"The PDF needs Pango on the server (Debian: apt-get install libpango-1.0-0 "
                f"libpangoft2-1.0-0): {exc}. The HTML and Markdown reports work without it.",
                status=503,
                content_type="text/plain; charset=utf-8",
            )
        pdf = HTML(string=html, base_url=request.build_absolute_uri("/")).write_pdf()
        response = HttpResponse(pdf, content_type="application/pdf")
        response["Content-Disposition"] = f'attachment; filename="{name}.pdf"'
        return response
    if fmt != "html":
        raise Http404("no such format")
    return HttpResponse(html)
