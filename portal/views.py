"""Server-rendered pages. Live parts are htmx fragments polled only while a job is active."""

from __future__ import annotations

import csv
import io
import json
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import TextField
from django.db.models.functions import Cast, Length
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_POST

from jobs import services
from jobs.access import artifacts_for, jobs_for
from jobs.api.authentication import rotate_token, token_expires_at
from jobs.api.errors import bound_errors
from jobs.api.throttles import take_submit_allowance, too_many_submissions
from jobs.api.views import artifact_response
from jobs.choices import ACTIVE_STATUSES, JobStatus, LaunchType
from jobs.fleet_view import waiting_for
from jobs.models import IllegalTransition, Job
from portal.charts import history_chart, job_charts, time_chart
from portal.comparison import CHARTS_OPEN, ROWS_PER_PAGE, compare_charts, short_labels
from portal.forms import JobSubmitForm, ProjectForm, param_fields
from portal.kinds import compare_sections, presenter_for, project_steps
from portal.measurements import PER_PAGE, csv_response, json_response, without_samples
from portal.porting import (
    COLUMN_TITLES,
    DEFAULT_SORT,
    FILE_COLUMNS,
    FILES_PER_PAGE,
    SCAN,
    burn_down_series,
    porting_report,
)
from portal.units import rate_unit
from results import services as results
from results.compare import (
    MAX_COLUMNS,
    CompareQuery,
    Comparison,
    History,
    HistoryQuery,
    QueryError,
    Row,
    compare,
    history,
)
from results.models import Verdict
from roadmap.gates import roadmap_state
from roadmap.plan import PLANS, current_phases
from stack.hipify.hazards import describe_rules
from stack.kinds import KINDS
from stack.textsafe import csv_row
from teams.access import can_write, is_admin, projects_for, teams_for, writable_team_ids
from teams.models import AdoptionProject, ApiDecision, SourceSnapshot, Team
from teams.porting import PortingInputError, forget_decision, record_decision, save_porting_settings
from teams.sources import (
    BROKER_DOWN_NOTE,
    SourceError,
    add_git,
    add_upload,
    current_code,
    newest_ready,
    source_of,
    switch_lineage,
    tree_of,
)


def _job(request: HttpRequest, pk: int) -> Job:
    return get_object_or_404(jobs_for(request.user).select_related("environment"), pk=pk)


@login_required
def dashboard(request: HttpRequest) -> HttpResponse:
    jobs = jobs_for(request.user)
    status = request.GET.get("status", "")
    if status in JobStatus.values:
        jobs = jobs.filter(status=status)
    project = request.GET.get("project", "")
    if project.isdigit():
        jobs = jobs.filter(project_id=int(project))
    page = Paginator(jobs, 25).get_page(request.GET.get("page"))
    context = {
        "page": page,
        "jobs": page.object_list,
        "status": status,
        "statuses": JobStatus.choices,
        "any_active": any(j.status in ACTIVE_STATUSES for j in page.object_list),
        "teams": teams_for(request.user),
        "projects": projects_for(request.user),
        "regressions": results.open_regressions(request.user)[:20],
    }
    template = "portal/_job_rows.html" if request.htmx else "portal/dashboard.html"
    return render(request, template, context)


SUMMARY_INLINE_BYTES = 32 * 1024  # a larger summary is a download, not part of the page


@login_required
def job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    # The summary is not loaded, only its size: a sweep's summary is a megabyte, decoding
    # it costs more than the rest of the page, and the page shows it only when it is small
    # (the presenter reads the parts it shows).
    job = get_object_or_404(
        jobs_for(request.user)
        .select_related("environment")
        .defer("summary")
        .annotate(summary_size=Length(Cast("summary", TextField()))),
        pk=pk,
    )
    events = list(job.events.order_by("id")[:2000])
    presenter = presenter_for(job.kind)
    measurements = Paginator(without_samples(job), PER_PAGE).get_page(request.GET.get("page"))
    summary_bytes = job.summary_size or 0
    small = 2 < summary_bytes <= SUMMARY_INLINE_BYTES  # "{}" is no summary
    return render(
        request,
        "portal/job_detail.html",
        {
            "job": job,
            "events": events,
            "cursor": events[-1].id if events else 0,
            "artifacts": job.artifacts.all(),
            "measurements": measurements.object_list,
            "measurements_page": measurements,
            "charts": job_charts(job, presenter),
            "presenter": presenter,
            **presenter.context(job, request),
            "environment": job.environment,
            "env_data": job.environment.data if job.environment else None,
            "summary_json": json.dumps(job.summary, indent=2) if small else "",
            "has_summary": summary_bytes > 2,
            "summary_bytes": summary_bytes,
            "params_json": json.dumps(job.params, indent=2),
            "can_write": can_write(request.user, job.team_id),
            "waiting": waiting_for(job),
            "verdicts": results.verdicts_of(job)[:500],
            "verdict_counts": results.verdict_counts(job),
            "baselines": job.baselines.select_related("project"),
            "scope_baselines": results.baselines_in_scope(job),
        },
    )


@login_required
def job_measurements_download(request: HttpRequest, pk: int, fmt: str) -> HttpResponse:
    """Every measurement of a job the user may see, as CSV or JSON (404 for another team's)."""
    job = _job(request, pk)
    return csv_response(job) if fmt == "csv" else json_response(job)


@login_required
def job_summary_download(request: HttpRequest, pk: int) -> HttpResponse:
    """The job's summary as a JSON file: the page folds it, or links here when it is large."""
    job = _job(request, pk)
    response = HttpResponse(
        json.dumps(job.summary or {}, indent=2), content_type="application/json"
    )
    response["Content-Disposition"] = f'attachment; filename="job-{job.pk}-summary.json"'
    return response


@login_required
@require_POST
def job_pin_baseline(request: HttpRequest, pk: int) -> HttpResponse:
    """Pin the job as the baseline of its project, environment and every benchmark it ran."""
    job = _job(request, pk)
    if not can_write(request.user, job.team_id):
        messages.error(request, "Viewers cannot pin baselines.")
        return redirect("portal:job-detail", pk=job.pk)
    try:
        pinned = results.pin_baseline(job, user=request.user, note=request.POST.get("note", ""))
    except results.BaselineError as exc:
        messages.error(request, str(exc))
    else:
        names = ", ".join(b.benchmark for b in pinned)
        messages.success(request, f"Job {job.pk} is now the baseline of {names} on this machine.")
    return redirect("portal:job-detail", pk=job.pk)


@login_required
@require_POST
def baseline_unpin(request: HttpRequest, pk: int) -> HttpResponse:
    baseline = get_object_or_404(results.baselines_for(request.user), pk=pk)
    if not can_write(request.user, baseline.project.team_id):
        messages.error(request, "Viewers cannot unpin baselines.")
    else:
        results.unpin_baseline(baseline)
        messages.info(
            request, f"Job {baseline.job_id} is no longer the {baseline.benchmark} baseline."
        )
    return redirect("portal:job-detail", pk=baseline.job_id)


@login_required
@require_POST
def job_acknowledge_regressions(request: HttpRequest, pk: int) -> HttpResponse:
    """Mark a job's regressions as seen: they leave the dashboard's open list."""
    job = _job(request, pk)
    if not can_write(request.user, job.team_id):
        messages.error(request, "Viewers cannot acknowledge regressions.")
    else:
        count = results.acknowledge(Verdict.objects.filter(job=job))
        messages.info(request, f"{count} regression(s) of job {job.pk} acknowledged.")
    if request.POST.get("next") == "dashboard":
        return redirect("portal:dashboard")
    return redirect("portal:job-detail", pk=job.pk)


@login_required
def job_log(request: HttpRequest, pk: int) -> HttpResponse:
    """New log lines after ?after=; tells the page to reload once the job has ended."""
    job = _job(request, pk)
    try:
        after = int(request.GET.get("after", "0"))
    except ValueError:
        after = 0
    events = services.events_after(job, after, 1000)
    response = render(
        request,
        "portal/_job_log.html",
        {
            "job": job,
            "events": events,
            "cursor": events[-1].id if events else after,
            # Refreshed with the status: the note follows the job (and the fleet) as it moves.
            "waiting": waiting_for(job),
        },
    )
    if job.is_terminal:
        response["HX-Refresh"] = "true"
    return response


def _say_submitted(request: HttpRequest, job: Job) -> None:
    if services.waits_for_broker(job):  # the broker could not be reached
        messages.warning(
            request, f"Job {job.pk} ({job.kind}) submitted. {services.BROKER_DOWN_NOTE}"
        )
    else:
        messages.success(request, f"Job {job.pk} ({job.kind}) submitted.")


@login_required
def job_submit(request: HttpRequest) -> HttpResponse:
    teams = Team.objects.filter(pk__in=writable_team_ids(request.user))
    projects = projects_for(request.user).filter(team__in=teams)
    project_id = request.GET.get("project", "")
    initial: dict[str, Any] = {"project": project_id} if project_id.isdigit() else {}
    if (chosen := KINDS.get(request.GET.get("kind", ""))) is not None:  # "start from this"
        initial["kind"] = chosen.name
        initial["params"] = json.dumps(dict(chosen.example_params or {}), indent=1)
    form = JobSubmitForm(request.POST or None, teams=teams, projects=projects, initial=initial)
    # Counted before the form is read, as the API counts a POST: one allowance for both.
    wait = take_submit_allowance(request.user) if request.method == "POST" else None
    if wait is not None:
        form.add_error(None, too_many_submissions(wait))
    elif request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            job = services.submit_job(
                user=request.user,
                kind=data["kind"],
                params=data["params"],
                team=data["team"],
                project=data.get("project"),
                timeout_s=data.get("timeout_s"),
                launch_type=LaunchType.MANUAL,
            )
        except services.SubmissionError as exc:
            # Bounded: a message may quote what was sent, and that may be a megabyte.
            for field, errors in bound_errors(exc.errors).items():
                for error in errors:
                    form.add_error(field if field in form.fields else None, error)
        else:
            _say_submitted(request, job)
            return redirect("portal:job-detail", pk=job.pk)
    kinds = [
        {
            "name": k.name,
            "title": k.title,
            "description": k.description,
            "fields": param_fields(k.params_schema),
            "example": json.dumps(dict(k.example_params)) if k.example_params else "",
        }
        for k in sorted(KINDS.values(), key=lambda k: k.name)
    ]
    response = render(request, "portal/job_submit.html", {"form": form, "kinds": kinds})
    if wait is not None:
        response.status_code = 429
        response["Retry-After"] = str(wait)
    return response


@login_required
@require_POST
def job_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    job = _job(request, pk)
    if not can_write(request.user, job.team_id):
        messages.error(request, "Viewers cannot cancel jobs.")
    else:
        try:
            services.cancel_job(job, by=request.user.get_username())
            messages.info(request, f"Cancel of job {job.pk} requested.")
        except IllegalTransition as exc:
            messages.error(request, str(exc))
    return redirect("portal:job-detail", pk=job.pk)


@login_required
@require_POST
def job_rerun(request: HttpRequest, pk: int) -> HttpResponse:
    original = _job(request, pk)
    # A rerun is a submission: the button takes from the allowance the form and the API use.
    if (wait := take_submit_allowance(request.user)) is not None:
        messages.error(request, too_many_submissions(wait))
        response = redirect("portal:job-detail", pk=original.pk)
        response["Retry-After"] = str(wait)
        return response
    try:
        job = services.rerun_job(original, user=request.user)
    except services.SubmissionError as exc:
        messages.error(request, str(exc))
        return redirect("portal:job-detail", pk=original.pk)
    return redirect("portal:job-detail", pk=job.pk)


@login_required
def artifact_download(request: HttpRequest, pk: int, artifact_pk: int) -> FileResponse:
    artifact = get_object_or_404(artifacts_for(request.user), pk=artifact_pk, job_id=pk)
    return artifact_response(artifact)


@login_required
def api_token(request: HttpRequest) -> HttpResponse:
    """Show the user's API token and when it expires; POST makes a new one (the old one stops
    working)."""
    from rest_framework.authtoken.models import Token

    if request.method == "POST":
        rotate_token(request.user)
        messages.success(request, "A new API token was made; the old one no longer works.")
        return redirect("portal:api-token")
    token = Token.objects.filter(user=request.user).first()
    context = {
        "token": token,
        "expires_at": token_expires_at(token) if token else None,
        "expired": token is not None and token_expires_at(token) <= timezone.now(),
        "ttl_days": settings.ROCPATH_TOKEN_TTL_DAYS,
    }
    return render(request, "portal/api_token.html", context)


@login_required
def project_list(request: HttpRequest) -> HttpResponse:
    teams = Team.objects.filter(pk__in=writable_team_ids(request.user))
    form = ProjectForm(request.POST or None, teams=teams)
    if request.method == "POST" and form.is_valid():
        project = form.save()
        messages.success(request, f"Project {project.name} created.")
        return redirect("portal:project-detail", pk=project.pk)  # where its first step is
    projects = list(projects_for(request.user))
    phases = current_phases([p.pk for p in projects])
    for p in projects:
        number = phases[p.pk]
        p.phase_label = (
            "not opened"
            if number is None
            else "deployed"
            if number == 5
            else f"phase {number}: {PLANS[number].title}"
        )
    return render(
        request,
        "portal/projects.html",
        {"projects": projects, "form": form, "can_create": bool(teams)},
    )


def _project(request: HttpRequest, pk: int) -> AdoptionProject:
    return get_object_or_404(projects_for(request.user), pk=pk)


@login_required
def project_detail(request: HttpRequest, pk: int) -> HttpResponse:
    project = _project(request, pk)
    writable = can_write(request.user, project.team_id)
    if request.method == "POST":
        if not writable:
            messages.error(request, "Viewers cannot add sources.")
            return redirect("portal:project-detail", pk=pk)
        try:
            if archive := request.FILES.get("archive"):
                snapshot = add_upload(
                    project,
                    archive,
                    archive.name,
                    request.user,
                    archive.size,
                    lineage=request.POST.get("lineage", ""),
                )
                messages.info(
                    request,
                    f"Source {snapshot.pk}: {snapshot.file_count} files checked; "
                    "a worker is extracting them.",
                )
            elif url := request.POST.get("git_url", "").strip():
                snapshot = add_git(
                    project,
                    url,
                    request.POST.get("ref", "").strip(),
                    request.user,
                    lineage=request.POST.get("lineage", ""),
                )
                messages.info(request, f"Source {snapshot.pk}: a worker is cloning {url}.")
            else:
                messages.error(request, "Choose an archive or give a git URL.")
                return redirect("portal:project-detail", pk=pk)
            snapshot.refresh_from_db()  # its task was sent on commit, or could not be
            if snapshot.awaiting_broker:
                messages.warning(request, BROKER_DOWN_NOTE)
        except SourceError as exc:
            messages.error(request, f"Refused: {exc}")
        return redirect("portal:project-detail", pk=pk)
    # The sources are read before the steps: a worker that finishes in between then shows
    # as a pending source the page keeps following, never as a ready one beside no steps
    # and no more polling (CI saw that race on stop 47).
    sources = list(project.sources.all()[:20])
    # The steps run on the newest ready source: no buttons (nor targets to show)
    # while every source is still being fetched or has failed.
    ready = writable and newest_ready(project) is not None
    # kind -> what its button says, with what the job takes from the project
    steps = {p.kind.name: p.step_label(project) for p in project_steps()} if ready else {}
    # kind -> why it cannot run here and how to fix it: said instead of a failing button
    blocked = (
        {p.kind.name: problem for p in project_steps() if (problem := p.step_problem(project))}
        if ready
        else {}
    )
    states = roadmap_state(project)
    current = next((st for st in states if st.status in ("active", "blocked")), None)
    latest: dict[str, Job] = {}
    for job in project.jobs.filter(status__in=[JobStatus.SUCCEEDED, JobStatus.FAILED]).order_by(
        "-finished_at", "-id"
    )[:200]:
        latest.setdefault(job.kind, job)
    return render(
        request,
        "portal/project_detail.html",
        {
            "roadmap": states,
            "current_phase": current,
            "latest_by_kind": sorted(latest.items()),
            "project": project,
            "sources": sources,
            "sources_pending": any(s.status == SourceSnapshot.Status.PENDING for s in sources),
            "jobs": project.jobs.all()[:20],
            "can_write": writable,
            "steps": steps,
            "blocked": blocked,
            "source_ready": ready,
            "current_code": current_code(project),
            "is_admin": is_admin(request.user, project.team_id),
        },
    )


@login_required
@require_POST
def project_current_code(request: HttpRequest, pk: int) -> HttpResponse:
    """A team admin switches the project's current code to a source's lineage."""
    project = _project(request, pk)
    source = source_of(project, request.POST.get("source", ""))
    if source is None:
        raise Http404("no such source in this project")
    try:
        switch_lineage(project, source, request.user)
    except SourceError as exc:
        messages.error(request, str(exc))
    else:
        messages.info(
            request, f"The current code is now lineage {source.lineage_key} (source {source.pk})."
        )
    return redirect("portal:project-detail", pk=pk)


@login_required
@require_POST
def project_step(request: HttpRequest, pk: int) -> HttpResponse:
    """Submit one roadmap step (a kind whose presenter has a step) for the project's newest
    source."""
    project = _project(request, pk)
    kind = request.POST.get("kind", "")
    if kind not in {p.kind.name for p in project_steps()}:
        raise Http404("no such step")
    if not can_write(request.user, project.team_id):
        messages.error(request, "Viewers cannot submit jobs.")
        return redirect("portal:project-detail", pk=pk)
    if problem := presenter_for(kind).step_problem(project):
        messages.error(request, f"Not submitted: {problem}.")
        return redirect("portal:project-detail", pk=pk)
    try:
        job = services.submit_job(
            user=request.user,
            kind=kind,
            team=project.team,
            project=project,
            launch_type=LaunchType.MANUAL,
        )
    except services.SubmissionError as exc:
        messages.error(request, f"Not submitted: {exc}")
        return redirect("portal:project-detail", pk=pk)
    _say_submitted(request, job)
    return redirect("portal:job-detail", pk=job.pk)


@login_required
def project_porting(request: HttpRequest, pk: int) -> HttpResponse:
    """The porting report; ?format=html downloads it as one self-contained file."""
    project = _project(request, pk)
    sort = request.GET.get("sort", DEFAULT_SORT)
    if sort not in FILE_COLUMNS:
        sort = DEFAULT_SORT
    descending = request.GET.get("dir", "desc") != "asc"
    export = request.GET.get("format") == "html"
    report = porting_report(
        project, sort=sort, descending=descending, lineage=request.GET.get("lineage")
    )
    series = burn_down_series(report["burn_down"])
    # The page shows the file table a page at a time; the download holds every file.
    files_page = Paginator(report["files"], FILES_PER_PAGE).get_page(request.GET.get("page"))
    context = {
        "project": project,
        "report": report,
        "burn_down_chart": (
            time_chart("Unsupported references across scans", series, y_title="references")
            if report["burn_down"]
            else None
        ),
        "scan_kind": SCAN,
        # The download is opened on its own: its links must name the portal in full.
        "base": request.build_absolute_uri("/").rstrip("/") if export else "",
        "page_url": (
            request.build_absolute_uri(reverse("portal:project-porting", args=[project.pk]))
            if export
            else ""
        ),
        "sort": sort,
        "descending": descending,
        "columns": [(c, *COLUMN_TITLES[c]) for c in FILE_COLUMNS],
        "can_decide": not export and can_write(request.user, project.team_id),
        "decision_choices": ApiDecision.Decision.choices,
        "hazard_rules": describe_rules(project.porting_setting("hazards_off")),
        "porting_settings": project.porting_settings or {},
        # One glob a line, as the form's textareas show and read them back.
        "porting_globs": {
            key: "\n".join(project.porting_setting(key)) for key in ("vendored", "not_vendored")
        },
        "files": report["files"] if export else files_page.object_list,
        "files_page": None if export else files_page,
        "css": (Path(settings.BASE_DIR) / "static" / "css" / "rocpath.css").read_text()
        if export
        else "",
    }
    if export:
        response = render(request, "portal/porting_export.html", context)
        response["Content-Disposition"] = f'attachment; filename="porting-{project.pk}.html"'
        return response
    return render(request, "portal/porting.html", context)


@login_required
@require_POST
def project_decision(request: HttpRequest, pk: int) -> HttpResponse:
    """Record the team's decision on one API group (the report's form); "reopen" removes it."""
    project = _project(request, pk)
    if not can_write(request.user, project.team_id):
        messages.error(request, "Viewers cannot record decisions.")
        return redirect("portal:project-porting", pk=pk)
    api = request.POST.get("api", "")
    if request.POST.get("decision") == "reopen":
        forget_decision(project, api)
        messages.info(request, f"{api}: open again.")
    else:
        try:
            record_decision(
                project,
                api=api,
                decision=request.POST.get("decision", ""),
                replacement=request.POST.get("replacement", ""),
                note=request.POST.get("note", ""),
                user=request.user,
            )
            messages.success(request, f"{api}: decision recorded.")
        except PortingInputError as exc:
            messages.error(request, f"Not recorded: {exc}")
    return redirect(reverse("portal:project-porting", args=[pk]) + "#api-groups")


@login_required
@require_POST
def project_porting_settings(request: HttpRequest, pk: int) -> HttpResponse:
    """The project's scan settings: vendored globs (added, taken back), hazard rules off."""
    project = _project(request, pk)
    if not can_write(request.user, project.team_id):
        messages.error(request, "Viewers cannot change scan settings.")
        return redirect("portal:project-porting", pk=pk)
    try:
        save_porting_settings(
            project,
            {
                "vendored": request.POST.get("vendored", ""),
                "not_vendored": request.POST.get("not_vendored", ""),
                "hazards_off": request.POST.getlist("hazards_off"),
            },
        )
        messages.success(request, "Scan settings saved: the next scan takes them.")
    except PortingInputError as exc:
        messages.error(request, f"Not saved: {exc}")
    return redirect(reverse("portal:project-porting", args=[pk]) + "#scan-settings")


SOURCE_VIEW_BYTES = 2 * 1024 * 1024  # the viewer shows at most this much of a file


@login_required
def source_file(request: HttpRequest, pk: int, source_pk: int) -> HttpResponse:
    """One file of a code snapshot, with line numbers, for the report's file:line links."""
    project = _project(request, pk)
    snapshot = get_object_or_404(project.sources, pk=source_pk)
    tree = tree_of(snapshot).resolve()
    path = (tree / request.GET.get("path", "")).resolve()
    if not path.is_relative_to(tree) or not path.is_file():
        raise Http404("no such file in this source")
    with path.open("rb") as f:
        data = f.read(SOURCE_VIEW_BYTES)  # a huge generated file must not fill the memory
    lines = data.decode("utf-8", errors="replace").splitlines()
    # isdecimal, not isdigit: isdigit takes "²", which int() refuses.
    line = request.GET.get("line", "")
    return render(
        request,
        "portal/source_file.html",
        {
            "project": project,
            "snapshot": snapshot,
            "path": path.relative_to(tree).as_posix(),
            "lines": lines,
            "highlight": int(line) if line.isdecimal() else 0,
        },
    )


def _export(request: HttpRequest, result: Comparison | History, name: str) -> HttpResponse | None:
    """?format=csv or json: the same result as a download, or None for the page."""
    fmt = request.GET.get("format", "")
    if fmt == "json":
        response: HttpResponse = JsonResponse(result.as_dict())
    elif fmt == "csv":
        out = io.StringIO()
        csv.writer(out).writerows(csv_row(row) for row in result.export_rows())
        response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
    else:
        return None
    response["Content-Disposition"] = f'attachment; filename="{name}.{fmt}"'
    return response


TIMES = "\N{MULTIPLICATION SIGN}"


def _fmt(value: float | None, places: int) -> str:
    """floatformat:"-places" without the template engine: 10.0 -> "10", 1.23456 -> "1.2346"."""
    if value is None:
        return "—"
    text = f"{value:.{places}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _compare_row(row: Row, label: str, history_url: str) -> SafeString:
    """One table row as HTML, written here rather than in the template: a 200-case table
    is 400 cells, and the template engine spent ~20 ms of CPU per 100 of them. ``label``
    names the case by what differs from the other cases (portal.comparison.short_labels);
    hovering it shows every parameter."""
    cells = []
    factor, unit = rate_unit(row.unit, (cell.value for cell in row.cells if cell is not None))
    for cell in row.cells:
        if cell is None:
            cells.append('<td class="num">—</td>')
            continue
        ratio = cell.ratio
        text = f'{_fmt(cell.value * factor, 4)} <small class="muted">n={cell.n_samples}</small>'
        if ratio is not None and ratio.value is not None:
            bounds = (
                f" [{_fmt(ratio.low, 3)}, {_fmt(ratio.high, 3)}]" if ratio.low is not None else ""
            )
            ratio_text = f"{TIMES}{ratio.value:.3f}{bounds}"
            text += f'<br><span class="ratio">{ratio_text}</span> {cell.reading}'
        css = f" reading-{cell.reading}" if cell.reading else ""
        cells.append(f'<td class="num{css}">{text}</td>')
    flags = "".join(f'<br><span class="flag">{escape(f)}</span>' for f in row.flags)
    history = ""
    if history_url:
        case = f"benchmark={quote(row.benchmark)}&metric={quote(row.metric)}"
        case += f"&case={quote(row.case_json)}"
        history = f'<a href="{escape(history_url + "&" + case)}">history</a>'
    return mark_safe(  # noqa: S308 - every value from the database is escaped above
        f'<tr data-case="{escape(row.case_json)}" data-metric="{escape(row.metric)}">'
        f'<td>{escape(row.benchmark)}</td><td><code title="{escape(row.case_label)}">'
        f"{escape(label)}</code>{flags}</td>"
        f"<td>{escape(row.metric)}</td><td>{escape(unit)}</td><td>{escape(row.better)}</td>"
        f"{''.join(cells)}<td>{history}</td></tr>"
    )


@login_required
def compare_page(request: HttpRequest) -> HttpResponse:
    """Jobs side by side; the whole query is in the URL, so the address is the permalink."""
    context: dict = {"params": request.GET, "kinds": sorted(KINDS), "max_columns": MAX_COLUMNS}
    try:
        query = CompareQuery.parse(request.GET)
        comparison = compare(request.user, query)
    except QueryError as exc:
        if request.GET.get("format"):
            return JsonResponse({exc.field: [exc.message]}, status=400)
        context["error"] = exc
        return render(request, "portal/compare.html", context, status=400)
    if export := _export(request, comparison, "comparison"):
        return export
    permalink = f"{reverse('portal:compare')}?{urlencode(query.params())}"
    charts = compare_charts(comparison) if comparison.rows else []
    named = short_labels([row.case for row in comparison.rows])
    pages = Paginator(list(zip(comparison.rows, named.labels, strict=True)), ROWS_PER_PAGE)
    page = pages.get_page(request.GET.get("page"))
    base = comparison.baseline
    fingerprint = base.job.environment.fingerprint if base and base.job.environment else ""
    history_url = f"{reverse('portal:history')}?fingerprint={fingerprint}" if fingerprint else ""
    context.update(
        {
            "comparison": comparison,
            "rows": [_compare_row(row, label, history_url) for row, label in page.object_list],
            "common": named.common,
            "page": page,
            "permalink": permalink,
            "query_string": urlencode(query.params()),
            "charts": charts[:CHARTS_OPEN],
            "more_charts": charts[CHARTS_OPEN:],
            # what a kind's presenter adds (the serving curves of inference-bench jobs)
            "kind_sections": compare_sections(
                [c.job for c in sorted(comparison.columns, key=lambda c: not c.is_baseline)]
            ),
        }
    )
    return render(request, "portal/compare.html", context)


HISTORY_RUNS_PER_PAGE = 50


@login_required
def history_page(request: HttpRequest) -> HttpResponse:
    """One case over the runs of one environment identity, change points marked."""
    try:
        query = HistoryQuery.parse(request.GET)
    except QueryError as exc:
        if request.GET.get("format"):
            return JsonResponse({exc.field: [exc.message]}, status=400)
        return render(request, "portal/history.html", {"error": exc}, status=400)
    result = history(request.user, query)
    if export := _export(request, result, "history"):
        return export
    starts = set(result.change_points)
    scale, unit = rate_unit(result.unit, (p.value for p in result.points))
    points = [(p.at, p.value * scale) for p in result.points]
    chart = (
        history_chart(
            f"{query.benchmark} · {query.metric}",
            points,
            [points[i] for i in sorted(starts)],
            y_title=unit or query.metric,
            levels=[
                (points[s.start][0], points[s.end - 1][0], s.median * scale)
                for s in result.segments
            ],
        )
        if points
        else None
    )
    # Newest first, 50 a page: a long history's chart draws no dot per run, and every
    # run's value is still one click away here.
    runs = Paginator(list(enumerate(result.points))[::-1], HISTORY_RUNS_PER_PAGE).get_page(
        request.GET.get("page")
    )
    return render(
        request,
        "portal/history.html",
        {
            "history": result,
            "query": query,
            "chart": chart,
            "unit": unit,
            "scale": scale,
            "starts": starts,
            "query_string": urlencode(query.params()),
            "newest": runs.object_list,
            "runs": runs,
        },
    )
