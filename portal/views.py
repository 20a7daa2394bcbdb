"""Server-rendered pages. Live parts are htmx fragments polled only while a job is active."""

from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from jobs import services
from jobs.access import artifacts_for, jobs_for
from jobs.api.authentication import rotate_token, token_expires_at
from jobs.api.errors import bound_errors
from jobs.api.views import artifact_response
from jobs.choices import ACTIVE_STATUSES, JobStatus, LaunchType
from jobs.models import IllegalTransition, Job
from portal.charts import time_chart
from portal.forms import JobSubmitForm, ProjectForm
from portal.kinds import presenter_for, project_steps
from portal.porting import (
    COLUMN_TITLES,
    DEFAULT_SORT,
    FILE_COLUMNS,
    FILES_PER_PAGE,
    SCAN,
    burn_down_series,
    porting_report,
)
from stack.hipify.hazards import describe_rules
from stack.kinds import KINDS
from teams.access import can_write, projects_for, teams_for, writable_team_ids
from teams.models import AdoptionProject, ApiDecision, SourceSnapshot, Team
from teams.porting import PortingInputError, forget_decision, record_decision, save_porting_settings
from teams.sources import SourceError, add_git, add_upload, newest_ready, tree_of


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
    }
    template = "portal/_job_rows.html" if request.htmx else "portal/dashboard.html"
    return render(request, template, context)


@login_required
def job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    job = _job(request, pk)
    events = list(job.events.order_by("id")[:2000])
    presenter = presenter_for(job.kind)
    return render(
        request,
        "portal/job_detail.html",
        {
            "job": job,
            "events": events,
            "cursor": events[-1].id if events else 0,
            "artifacts": job.artifacts.all(),
            "measurements": job.measurements.all()[:500],
            "charts": presenter.charts(job),
            "presenter": presenter,
            "environment": job.environment,
            "env_data": job.environment.data if job.environment else None,
            "summary_json": json.dumps(job.summary, indent=2) if job.summary else "",
            "params_json": json.dumps(job.params, indent=2),
            "can_write": can_write(request.user, job.team_id),
            **presenter.context(job, request),
        },
    )


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
        {"job": job, "events": events, "cursor": events[-1].id if events else after},
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
    initial = {"project": project_id} if project_id.isdigit() else {}
    form = JobSubmitForm(request.POST or None, teams=teams, projects=projects, initial=initial)
    if request.method == "POST" and form.is_valid():
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
            "schema": json.dumps(k.params_schema.get("properties", {}), indent=2),
        }
        for k in sorted(KINDS.values(), key=lambda k: k.name)
    ]
    return render(request, "portal/job_submit.html", {"form": form, "kinds": kinds})


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
        return redirect(reverse("portal:projects"))
    return render(
        request,
        "portal/projects.html",
        {"projects": projects_for(request.user), "form": form, "can_create": bool(teams)},
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
        except SourceError as exc:
            messages.error(request, f"Refused: {exc}")
        return redirect("portal:project-detail", pk=pk)
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
    sources = list(project.sources.all()[:20])
    return render(
        request,
        "portal/project_detail.html",
        {
            "project": project,
            "sources": sources,
            "sources_pending": any(s.status == SourceSnapshot.Status.PENDING for s in sources),
            "jobs": project.jobs.all()[:20],
            "can_write": writable,
            "steps": steps,
            "blocked": blocked,
            "source_ready": ready,
        },
    )


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
