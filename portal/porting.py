"""The porting report of a project: what its HIPIFY scans and compile checks found.

One function builds it for the page, the JSON API and the downloadable HTML alike.
A report about two kinds, so it names them, through their own modules (``KIND.name``).
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from django.db.models import Prefetch

from jobs.choices import JobStatus
from jobs.models import Artifact, Job, Measurement
from jobs.services import artifact_file
from stack import contract
from stack.kinds import compile_check, hipify_scan
from teams.models import AdoptionProject
from teams.porting import api_groups_with_decisions, decisions_of, lacking_refs

SCAN = hipify_scan.KIND.name  # also the benchmark its measurements are stored under
COMPILE = compile_check.KIND.name
# Counted per place (code, comment, string, ...); the report counts the code ones,
# in the burn-down and in the file table's columns of the same names.
BURN_DOWN_METRICS = ("unsupported", "removed", "deprecated", "unconverted")
# Scans since issue 14 also store the project's own code ("project" scope: vendored files
# and look-alike identifiers out); the burn-down draws those where a scan has them.
PROJECT_METRICS = (*BURN_DOWN_METRICS, "hazards")
FILES_PER_PAGE = 200  # rows of the file table per page (the download holds all)
FILE_COLUMNS = (
    "path",
    "lines",
    "cuda_refs",
    "converted_refs",
    "unsupported",
    "deprecated",
    "removed",
    "unconverted",
    "hazards",
    "warnings_count",
    "vendored",
)
# What a person reads above each column, and whether it counts only findings in code
# (FILE_COLUMNS' keys stay the field names of files.json and the JSON report).
COLUMN_TITLES = {
    "path": ("File", ""),
    "lines": ("Lines", ""),
    "cuda_refs": ("CUDA refs converted", "in code and elsewhere, as hipify converts them"),
    "converted_refs": ("All conversions (raw)", "hipify-perl's own count, identity mappings too"),
    "unsupported": ("HIP lacks (in code)", "unsupported identifiers, in code only"),
    "deprecated": ("Deprecated (in code)", "in code only"),
    "removed": ("Removed (in code)", "in code only"),
    "unconverted": ("cudaX left (in code)", "cuda… tokens left after translation, in code"),
    "hazards": ("Hazards (in code)", "hazard-rule findings in code, every rule"),
    "warnings_count": ("Warnings (raw)", "hipify-perl's count: comments and strings too"),
    "vendored": ("Vendored", "why the file is taken for third-party code (out of the estimate)"),
}
DEFAULT_SORT = "unsupported"


NO_SOURCE = "(no source)"  # the lineage of scans that name no snapshot


def lineage_of(job: Job) -> str:
    return job.source.lineage_key if job.source_id else NO_SOURCE


def lineages(project: AdoptionProject) -> list[dict[str, Any]]:
    """The project's scanned lineages, newest scan first: key, scans, newest scan's job.

    A lineage is one codebase over time (SourceSnapshot.lineage_key); the report
    follows one, so a scan of an unrelated tree starts its own instead of reading
    as progress on another.
    """
    found: dict[str, dict[str, Any]] = {}
    scans = (
        Job.objects.filter(project=project, kind=SCAN, status=JobStatus.SUCCEEDED)
        .select_related("source")
        .order_by("-finished_at", "-id")
    )
    for job in scans:
        key = lineage_of(job)
        entry = found.setdefault(key, {"key": key, "scans": 0, "newest_job": job.pk})
        entry["scans"] += 1
    return list(found.values())


def burn_down(project: AdoptionProject, lineage: str | None = None) -> list[dict[str, Any]]:
    """Per scan of one lineage (the newest scan's by default): when, which source, and
    the references in code still to port. Never mixes lineages."""
    if lineage is None:
        known = lineages(project)
        lineage = known[0]["key"] if known else NO_SOURCE
    scans = (
        Job.objects.filter(project=project, kind=SCAN, status=JobStatus.SUCCEEDED)
        .select_related("source")
        .order_by("finished_at", "id")
        .prefetch_related(
            Prefetch(
                "measurements",
                queryset=Measurement.objects.filter(
                    benchmark=SCAN, metric__in=(*PROJECT_METRICS, "effort")
                ),
            )
        )
    )
    history = []
    for job in scans:
        if lineage_of(job) != lineage:
            continue
        point: dict[str, Any] = {"job": job.pk, "at": job.finished_at, "source": job.source_id}
        project_scope: dict[str, float] = {}
        for m in job.measurements.all():
            if m.metric == "effort":
                point["effort_hours"] = m.value
            elif m.case.get("scope") == "code":
                point[m.metric] = m.value
            elif m.case.get("scope") == "project":
                project_scope[m.metric] = m.value
        point["scope"] = "project" if project_scope else "code"
        point.update(project_scope)
        history.append(point)
    return history


def _file_table(job: Job) -> dict[str, Any] | None:
    """The scan's per-file counts: files.json, or findings.json from scans that predate it.

    files.json holds the same per-file counts without the warnings, a few percent
    of findings.json's size, so a page view does not parse every warning.
    """
    artifacts = {a.path: a for a in Artifact.objects.filter(job=job, path__in=_FILE_TABLES)}
    for path in _FILE_TABLES:
        if path in artifacts:
            try:
                text = artifact_file(artifacts[path]).read_text()
            except (OSError, ValueError):
                continue
            if contract.nesting_depth(text) > contract.MAX_JSON_DEPTH:
                continue  # a runner wrote it: json.loads would recurse past the limit
            try:
                return json.loads(text)
            except ValueError:
                continue
    return None


_FILE_TABLES = ("hipify/files.json", "hipify/findings.json")


def file_rows(
    findings: dict[str, Any] | None, sort: str = DEFAULT_SORT, descending: bool = True
) -> list[dict]:
    """One row per scanned file, sortable by any column; findings counted where they are code.

    ``findings``: files.json or findings.json (the same per-file counts). Each row
    holds FILE_COLUMNS in their order, so the page renders a row's items as its
    cells. ``sort`` must be one of FILE_COLUMNS (the view checks what a user sent).
    """
    rows = []
    for f in (findings or {}).get("files", []):
        counts = f.get("counts", {})
        rows.append(
            {
                column: (
                    counts.get(column, {}).get("code", 0)
                    if column in BURN_DOWN_METRICS
                    else (f.get(column) or "")
                    if column == "vendored"
                    else f.get(column, 0)
                )
                for column in FILE_COLUMNS
            }
        )
    rows.sort(key=lambda r: (r[sort], r["path"]), reverse=descending)
    return rows


def compile_status(project: AdoptionProject) -> dict[str, Any]:
    """The last compile check's outcome per target, said in words whatever happened.

    A check that could not run (no hipcc, no image, killed) is "failed to run" with the
    reason, never left out; none yet says so.
    """
    job = (
        Job.objects.filter(
            project=project,
            kind=COMPILE,
            status__in=[
                JobStatus.SUCCEEDED,
                JobStatus.FAILED,
                JobStatus.ERRORED,
                JobStatus.CANCELED,
            ],
        )
        .order_by("-finished_at", "-id")
        .first()
    )
    if job is None:
        return {"status": "not run", "why": "no compile check of this project has finished yet"}
    summary = job.summary or {}
    targets = summary.get("per_target", {})
    requested = (job.params or {}).get("targets") or list(targets)
    per_target = {}
    for target in requested:
        t = targets.get(target)
        if job.status in (JobStatus.ERRORED, JobStatus.CANCELED) or t is None:
            why = job.error or f"the job {job.get_status_display().lower()}"
            per_target[target] = {"status": "failed to run", "why": why}
        else:
            status = "failed" if t.get("failed") else "passed"
            per_target[target] = {"status": status, **t}
    return {
        "job": job.pk,
        "at": job.finished_at,
        "status": job.status,
        "error": job.error or "",
        "targets": per_target,
        "failed_files": summary.get("failed_files", []),
        "first_errors": summary.get("first_errors", []),
    }


def porting_report(
    project: AdoptionProject,
    *,
    sort: str = DEFAULT_SORT,
    descending: bool = True,
    lineage: str | None = None,
) -> dict[str, Any]:
    """The report of one lineage: ``lineage`` if the project has scans of it, else the
    newest scan's."""
    known = lineages(project)
    chosen = next((entry for entry in known if entry["key"] == lineage), None)
    chosen = chosen or (known[0] if known else None)
    scan = Job.objects.select_related("source").get(pk=chosen["newest_job"]) if chosen else None
    summary = (scan.summary if scan else None) or {}
    findings = _file_table(scan) if scan else None
    top = [
        a
        for a in summary.get("top_apis", [])
        if a.get("kind") in ("unsupported", "removed", "unsupported_device_function")
    ]
    groups, tally = api_groups_with_decisions(summary.get("api_groups", []), decisions_of(project))
    identity = summary.get("identity_mappings", {})
    return {
        "project": {"id": project.pk, "name": project.name, "team": project.team.slug},
        "scan": (
            {
                "job": scan.pk,
                "at": scan.finished_at,
                "source": scan.source_id,
                "engine": summary.get("engine"),
                "tool": summary.get("tool"),
                "markdown_artifact": Artifact.objects.filter(job=scan, path="hipify/report.md")
                .values_list("pk", flat=True)
                .first(),
            }
            if scan
            else None
        ),
        "totals": summary.get("totals"),
        "effort": summary.get("effort"),
        # the estimate as it was before vendored code, API groups and look-alike
        # identifiers were set apart: every file, every identifier (docs/hipify.md)
        "effort_everything": summary.get("effort_everything"),
        "effort_terms": effort_terms(summary.get("effort")),
        "vendored": summary.get("vendored"),
        "api_groups": groups,
        "decisions": tally,
        "unconverted_split": summary.get("unconverted_split"),
        "hazards": summary.get("hazards"),
        "warnings_by_kind": summary.get("warnings_by_kind", {}),
        # the count the estimate, the gates and the report read (the project's own code)
        "lacking": lacking_refs(summary) if scan else None,
        "families": summary.get("families", {}),
        "identity_mappings": identity,
        # identity mappings split: CUDA names HIP keeps as they are (texture) vs names
        # that are not CUDA's at all (OpenGL types, ...)
        "identity_split": split_identity(identity),
        "top_unsupported": top,
        "files": file_rows(findings, sort, descending),
        "lineage": {
            "key": chosen["key"] if chosen else None,
            "others": [entry for entry in known if entry is not chosen],
        },
        "burn_down": burn_down(project, chosen["key"]) if chosen else [],
        "compile": compile_status(project),
    }


def effort_terms(effort: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The estimate's terms in order: input, weight, hours, and what it left out and why."""
    if not effort:
        return []
    left_out = effort.get("left_out", {})
    return [
        {
            "term": term,
            "value": value,
            "weight": effort.get("weights_hours", {}).get(term),
            "hours": effort.get("terms_hours", {}).get(term),
            "left_out": left_out.get(term, []),
        }
        for term, value in effort.get("inputs", {}).items()
    ]


def split_identity(identity: dict[str, int]) -> dict[str, dict[str, int]]:
    """hipify-perl's identity mappings: CUDA names kept as they are vs non-CUDA names."""
    from stack.hipify.families import family_of

    out: dict[str, dict[str, int]] = {"cuda_same_name": {}, "not_cuda": {}}
    for name, n in identity.items():
        cuda = family_of(name) not in ("other", "graphics interop", "headers")
        out["cuda_same_name" if cuda else "not_cuda"][name] = n
    return out


def burn_down_series(history: list[dict[str, Any]]) -> dict[str, list]:
    series: dict[str, list] = defaultdict(list)
    for point in history:
        for metric in PROJECT_METRICS:
            if metric in point:
                series[f"{metric} (in code)"].append((point["at"], point[metric]))
    return dict(series)
