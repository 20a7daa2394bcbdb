"""Where a job's files live on the worker: its folder, its artifacts, its project's cache."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from jobs.models import Artifact, Job


def job_dir(job_id: int) -> Path:
    return Path(settings.ARTIFACT_ROOT) / "jobs" / str(job_id)


def cache_dir_for(job: Job) -> Path:
    """A per-project, per-kind folder that outlives jobs (e.g. hipify findings by file hash)."""
    owner = f"project-{job.project_id}" if job.project_id else f"team-{job.team_id}"
    return Path(settings.ARTIFACT_ROOT) / "cache" / job.kind / owner


def artifact_dir(job_id: int) -> Path:
    """Where a job's artifacts are kept: copies the server made, in a folder the job never
    had mounted or writable (out/ is the job's, and anything in it may be swapped)."""
    return job_dir(job_id) / "artifacts"


def artifact_file(artifact: Artifact) -> Path:
    """The artifact's copy, refusing any path that would leave the job's artifact folder."""
    root = artifact_dir(artifact.job_id).resolve()
    path = (root / artifact.path).resolve()
    if not path.is_relative_to(root):
        raise FileNotFoundError(artifact.path)
    return path
