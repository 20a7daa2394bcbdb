"""profile on the pages: the GEMM shapes it ran with a button to replay them with blas-bench,
and the diff of two profile jobs kernel by kernel."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from jobs import services
from jobs.access import jobs_for
from jobs.models import Job
from portal.kinds.base import Presenter
from results.profile_diff import diff_jobs
from stack.kinds.blas_bench import KIND as BLAS_BENCH
from stack.kinds.profile import KIND
from stack.profile.diff import DiffError
from stack.tune.shapes import replay_params, shapes_from_rows
from teams.access import can_write

PRESENTER = Presenter(KIND, partial="portal/kinds/profile.html")


def _profile_job(request: HttpRequest, pk: int) -> Job:
    return get_object_or_404(jobs_for(request.user).filter(kind=KIND.name), pk=pk)


@login_required
@require_POST
def replay_shapes(request: HttpRequest, pk: int) -> HttpResponse:
    """Submit blas-bench jobs (one per precision) that replay exactly this profile's GEMMs."""
    job = _profile_job(request, pk)
    rows = (job.summary or {}).get("gemm_shapes") or []
    if not can_write(request.user, job.team_id):
        messages.error(request, "You cannot submit jobs for this team.")
        return redirect("portal:job-detail", pk=job.pk)
    plan = replay_params(shapes_from_rows(rows))
    if not plan.params:
        messages.error(request, "This profile recorded no GEMM shape blas-bench can replay.")
        return redirect("portal:job-detail", pk=job.pk)
    submitted = []
    try:
        for params in plan.params:
            submitted.append(
                services.submit_job(
                    user=request.user,
                    kind=BLAS_BENCH.name,
                    params=params,
                    team=job.team,
                    project=job.project,
                    hardware=job.requested_hardware or None,
                )
            )
    except services.SubmissionError as exc:
        messages.error(request, str(exc))
        return redirect("portal:job-detail", pk=job.pk)
    shown = ", ".join(f"{j.pk} ({j.params['precisions'][0]})" for j in submitted)
    messages.success(request, f"Replaying {len(rows)} GEMM shape(s) with blas-bench: job {shown}.")
    return redirect("portal:job-detail", pk=submitted[0].pk)


@login_required
def profile_diff(request: HttpRequest, pk: int) -> HttpResponse:
    """This profile (current) against ?baseline=<job id>, kernel by kernel."""
    current = _profile_job(request, pk)
    context: dict = {"job": current, "baseline": None, "diff": None, "error": ""}
    baseline_id = request.GET.get("baseline", "").strip()
    if baseline_id:
        baseline = (
            jobs_for(request.user).filter(kind=KIND.name, pk=baseline_id).first()
            if baseline_id.isdigit()
            else None
        )
        if baseline is None:
            context["error"] = f"baseline: no profile job {baseline_id} you can see"
        else:
            context["baseline"] = baseline
            try:
                found = diff_jobs(baseline, current, request.GET.get("profiler") or None)
                context["diff"] = found.as_dict()
            except DiffError as exc:
                context["error"] = str(exc)
    status = 400 if context["error"] else 200
    return render(request, "portal/kinds/profile_diff.html", context, status=status)
