"""The porting report of a project: what its HIPIFY scans and compile checks found.

One function builds it for the page, the JSON API and the downloadable HTML alike.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from typing import Any

from django.db.models import Prefetch

from jobs.choices import JobStatus
from jobs.models import Artifact, Job, Measurement
from jobs.services import artifact_file
from portal.models import AdoptionProject

SCAN = "hipify-scan"
COMPILE = "compile-check"
BURN_DOWN_METRICS = ("unsupported", "removed", "deprecated", "unconverted")
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
    "warnings_count",
)


def _latest(project: AdoptionProject, kind: str) -> Job | None:
    # A compile check whose files failed to compile "failed", and is still the answer.
    ended = [JobStatus.SUCCEEDED, JobStatus.FAILED] if kind == COMPILE else [JobStatus.SUCCEEDED]
    return (
        Job.objects.filter(project=project, kind=kind, status__in=ended)
        .select_related("source")
        .order_by("-finished_at", "-id")
        .first()
    )


def burn_down(project: AdoptionProject) -> list[dict[str, Any]]:
    """Per scan: when, which source, and the references in code still to port."""
    scans = (
        Job.objects.filter(project=project, kind=SCAN, status=JobStatus.SUCCEEDED)
        .order_by("finished_at", "id")
        .prefetch_related(
            Prefetch(
                "measurements",
                queryset=Measurement.objects.filter(
                    benchmark=SCAN, metric__in=(*BURN_DOWN_METRICS, "effort")
                ),
            )
        )
    )
    history = []
    for job in scans:
        point: dict[str, Any] = {"job": job.pk, "at": job.finished_at, "source": job.source_id}
        for m in job.measurements.all():
            if m.metric == "effort":
                point["effort_hours"] = m.value
            elif m.case.get("scope") == "code":
                point[m.metric] = m.value
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
                return json.loads(artifact_file(artifacts[path]).read_text())
            except (OSError, ValueError):
                continue
    return None


_FILE_TABLES = ("hipify/files.json", "hipify/findings.json")


def file_rows(
    findings: dict[str, Any] | None, sort: str = "unsupported", descending: bool = True
) -> list[dict]:
    """One row per scanned file, sortable by any column; findings counted where they are code.

    ``findings``: files.json or findings.json (the same per-file counts).
    """
    rows = []
    for f in (findings or {}).get("files", []):
        counts = f.get("counts", {})
        row = {
            key: f.get(key, 0)
            for key in ("path", "lines", "cuda_refs", "converted_refs", "warnings_count")
        }
        for kind in ("unsupported", "deprecated", "removed", "unconverted"):
            row[kind] = counts.get(kind, {}).get("code", 0)
        rows.append(row)
    key = sort if sort in FILE_COLUMNS else "unsupported"
    rows.sort(key=lambda r: (r[key], r["path"]) if key != "path" else r["path"], reverse=descending)
    return rows


def compile_status(project: AdoptionProject) -> dict[str, Any] | None:
    job = _latest(project, COMPILE)
    if job is None:
        return None
    summary = job.summary or {}
    return {
        "job": job.pk,
        "at": job.finished_at,
        "targets": summary.get("per_target", {}),
        "failed_files": summary.get("failed_files", []),
        "first_errors": summary.get("first_errors", []),
    }


def porting_report(
    project: AdoptionProject, *, sort: str = "unsupported", descending: bool = True
) -> dict[str, Any]:
    scan = _latest(project, SCAN)
    summary = (scan.summary if scan else None) or {}
    findings = _file_table(scan) if scan else None
    top = [
        a
        for a in summary.get("top_apis", [])
        if a.get("kind") in ("unsupported", "removed", "unsupported_device_function")
    ]
    return {
        "project": {"id": project.pk, "name": project.name, "team": project.team.slug},
        "scan": (
            {
                "job": scan.pk,
                "at": scan.finished_at,
                "source": scan.source_id,
                "engine": summary.get("engine"),
                "tool": summary.get("tool"),
            }
            if scan
            else None
        ),
        "totals": summary.get("totals"),
        "effort": summary.get("effort"),
        "warnings_by_kind": summary.get("warnings_by_kind", {}),
        "families": summary.get("families", {}),
        "identity_mappings": summary.get("identity_mappings", {}),
        "top_unsupported": top,
        "files": file_rows(findings, sort, descending),
        "burn_down": burn_down(project),
        "compile": compile_status(project),
    }


def burn_down_series(history: list[dict[str, Any]]) -> dict[str, list]:
    series: dict[str, list] = defaultdict(list)
    for point in history:
        for metric in BURN_DOWN_METRICS:
            if metric in point:
                series[f"{metric} (in code)"].append((point["at"], point[metric]))
    return dict(series)


_GFX = re.compile(r"gfx[0-9a-f]+(?::[a-z0-9+-]+)*", re.IGNORECASE)


def compile_targets(project: AdoptionProject) -> list[str]:
    """The AMD architectures to compile a project for, from its target GPUs.

    A ``gfx…`` entry is taken as it is; a GPU name through the GPU table
    (``stack.blas.peaks``: MI300X → gfx942, MI250X → gfx90a, …); NVIDIA names
    and unknown ones add nothing. gfx942 (MI300X/MI325X) when none is left.
    """
    from stack.blas.peaks import PEAK_TABLE, match_name

    targets: list[str] = []
    for entry in project.target_gpus or []:
        text = str(entry).strip()
        if _GFX.fullmatch(text):
            arch = text.lower()
        else:
            row = match_name(text)
            arch = PEAK_TABLE[row].arch if row else ""
        if arch.startswith("gfx") and arch not in targets:
            targets.append(arch)
    return targets or ["gfx942"]
