"""The registry of tuned GEMM files: registered from the job that tuned them, checked
against a stack before any job gets one, and handed to a job as an input folder.

A job's result declares a tuned file in ``summary.tuned_file`` (the artifact's path, the
validators, the GPU): whatever its kind, a succeeded job that declares one has it
registered when it finishes (``register_from_job``, on jobs.finished.job_finished). A
later job of the team may run with it (``submit_job(tuned_file=…)``): refused when the
file is stale against the stack the team last ran that image on, and checked again in the
job's container against the PyTorch that runs there (stack.tune.apply), which alone sets
TunableOp's environment variables — so a file is never applied silently to a stack it
was not tuned on.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any

from django.db import IntegrityError, transaction

from jobs.choices import JobStatus
from jobs.models import Environment, Job, TunedFile
from jobs.services.paths import artifact_file
from stack.tune import registry

logger = logging.getLogger(__name__)
MAX_FILE_BYTES = 8 * 1024 * 1024


def register_from_job(job: Job) -> TunedFile | None:
    """The tuned file a succeeded job declared, registered once (None if it declared none,
    or its artifact is missing)."""
    declared = (job.summary or {}).get("tuned_file")
    if job.status != JobStatus.SUCCEEDED or not isinstance(declared, dict):
        return None
    existing = TunedFile.objects.filter(job=job).first()
    if existing is not None:
        return existing
    artifact = job.artifacts.filter(path=str(declared.get("artifact") or "")).first()
    if artifact is None:
        logger.warning("job %s declared a tuned file %r it did not keep", job.pk, declared)
        return None
    path = artifact_file(artifact)
    if not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
        return None
    content = path.read_text(encoding="utf-8", errors="replace")
    validators = declared.get("validators") if isinstance(declared.get("validators"), dict) else {}
    key = registry.registry_key(validators, declared.get("gpu_arch"))
    try:
        with transaction.atomic():
            return TunedFile.objects.create(
                team=job.team,
                project=job.project,
                job=job,
                method=str(declared.get("method") or "")[:32],
                backend=str(declared.get("backend") or "")[:16],
                gpu_arch=(key["gpu_arch"] or "")[:64],
                gpu_name=str(declared.get("gpu_name") or "")[:255],
                torch_version=(key["torch_version"] or "")[:64],
                rocm_version=(key["rocm_version"] or "")[:64],
                hipblaslt_version=(key["hipblaslt_version"] or "")[:64],
                rocblas_version=(key["rocblas_version"] or "")[:64],
                validators={str(k): str(v) for k, v in validators.items()},
                entries=int(declared.get("entries") or 0),
                content=content,
                sha256=hashlib.sha256(content.encode("utf-8")).hexdigest(),
            )
    except IntegrityError:  # registered meanwhile by a second delivery of the signal
        return TunedFile.objects.filter(job=job).first()


def freshness(tuned: TunedFile, environment: dict[str, Any] | None) -> registry.Freshness:
    """Whether the file fits the stack of that environment fingerprint (None: unknown)."""
    gpus = (environment or {}).get("gpus") or []
    arch = gpus[0].get("arch") if gpus and isinstance(gpus[0], dict) else None
    return registry.check(
        tuned.validators,
        registry.environment_validators(environment),
        gpu_arch=tuned.gpu_arch or None,
        stack_arch=arch,
    )


def target_environment(team_id: int, image: str) -> Environment | None:
    """The stack a job of the team on that image will most likely run on: the environment
    of the team's latest finished job on it (the check in the container has the last
    word)."""
    job = (
        Job.objects.filter(team_id=team_id, image=image, environment__isnull=False)
        .exclude(finished_at=None)
        .order_by("-finished_at")
        .select_related("environment")
        .first()
    )
    return job.environment if job else None


def write_input(tuned: TunedFile, folder: Path) -> Path:
    """The job's input folder (stack.tune.registry.INPUT_FOLDER): the file and a manifest
    of what it was tuned on, for the container's own check."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / registry.FILE_NAME).write_text(tuned.content, encoding="utf-8")
    manifest = {
        "tuned_file_id": tuned.pk,
        "validators": tuned.validators,
        "gpu_arch": tuned.gpu_arch,
        "sha256": tuned.sha256,
    }
    (folder / registry.MANIFEST_NAME).write_text(json.dumps(manifest), encoding="utf-8")
    return folder
