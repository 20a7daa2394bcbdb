"""Builders of one object each, with the fewest fields a test must care about."""

from __future__ import annotations

import itertools
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.utils import timezone

from jobs.choices import JobStatus
from jobs.models import Environment, Job, Measurement, Worker
from jobs.services import record_environment
from teams.choices import Role
from teams.models import AdoptionProject, Membership, Team

_seq = itertools.count(1)


def make_user(username: str | None = None, password: str = "pw-for-tests") -> Any:
    username = username or f"user{next(_seq)}"
    return get_user_model().objects.create_user(username=username, password=password)


def make_team(name: str | None = None) -> Team:
    n = next(_seq)
    name = name or f"Team {n}"
    return Team.objects.create(name=name, slug=f"team-{n}")


def add_member(team: Team, user: Any, role: str = Role.MEMBER) -> Membership:
    return Membership.objects.create(team=team, user=user, role=role)


def make_project(team: Team, name: str | None = None) -> AdoptionProject:
    return AdoptionProject.objects.create(team=team, name=name or f"project {next(_seq)}")


def make_job(team: Team, *, status: str = JobStatus.PENDING, **fields: Any) -> Job:
    """A job row in any status, written directly: for tests of reading, not of moving."""
    fields.setdefault("kind", "noop")
    fields.setdefault("timeout_s", 60)
    if status != JobStatus.PENDING:
        fields.setdefault("queued_at", timezone.now())
    if status in (JobStatus.RUNNING, JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.ERRORED):
        fields.setdefault("started_at", timezone.now())
        fields.setdefault("heartbeat_at", timezone.now())
    return Job.objects.create(team=team, status=status, **fields)


# A GPU of an announced inventory, as the probe reports one (docs/results/probe-h200.json).
H200 = {"vendor": "nvidia", "model": "NVIDIA H200", "arch": "sm_90", "memory_bytes": 150754820096}
MI300X = {
    "vendor": "amd",
    "model": "AMD Instinct MI300X",
    "arch": "gfx942",
    "memory_bytes": 192 * 2**30,
}


def make_worker(
    name: str | None = None,
    *,
    gpus: list[dict] | None = None,
    host: str | None = None,
    executor: str = "local",
    queues: list[str] | None = None,
    seen_s_ago: float = 0,
    **fields: Any,
) -> Worker:
    """A worker's announcement, as jobs.fleet writes it, ``seen_s_ago`` seconds ago (default:
    now). By default it has one MI300X with ROCm and consumes the default queue and the
    capability queues its GPUs give it (one per vendor and arch, one for its host)."""
    from django.conf import settings

    from jobs.routing import capability_queues

    n = next(_seq)
    name = name or f"celery@gpu-{n}"
    host = host or name.partition("@")[2] or f"host-{n}"
    inventory = fields.pop("inventory", None) or {
        "gpus": [{"index": i, **gpu} for i, gpu in enumerate([MI300X] if gpus is None else gpus)],
        "software": {"rocm_version": "6.2.1"},
        "images": [],
        "cpus": 16,
        "memory_mb": 131072,
    }
    if queues is None:
        queues = [settings.CELERY_TASK_DEFAULT_QUEUE, *capability_queues(inventory, host)]
    seen = timezone.now() - timedelta(seconds=seen_s_ago)
    fields.setdefault("last_seen_at", seen)
    fields.setdefault("started_at", seen - timedelta(hours=1))
    return Worker.objects.create(
        name=name, host=host, executor=executor, queues=queues, inventory=inventory, **fields
    )


def make_measurement(job: Job, value: float, **case: Any) -> Measurement:
    """One GEMM throughput measurement (what the blas-bench charts draw) of the given case."""
    return Measurement.objects.create(
        job=job,
        benchmark="gemm",
        case=case,
        metric="throughput",
        unit="TFLOP/s",
        value=value,
        better="higher",
    )


def make_environment(
    gpu: str = "H200", vendor: str = "nvidia", arch: str = "sm_90", **software: Any
) -> Environment:
    """One machine and stack (CUDA 12.4 unless software says otherwise), via the real recorder."""
    return record_environment(
        {
            "host": {"hostname": "node1"},
            "gpus": [{"vendor": vendor, "model": gpu, "arch": arch}],
            "software": {"cuda_version": "12.4", **software},
        }
    )


def make_sampled_measurement(
    job: Job,
    value: float,
    samples: list[float],
    *,
    metric: str = "throughput",
    unit: str = "TFLOP/s",
    better: str = "higher",
    **case: Any,
) -> Measurement:
    """A GEMM measurement with its raw samples, on the job's environment (what compare reads)."""
    return Measurement.objects.create(
        job=job,
        environment=job.environment,
        benchmark="gemm",
        case=case,
        metric=metric,
        unit=unit,
        value=value,
        samples=samples,
        better=better,
    )


def result_doc(kind: str = "noop", **fields: Any) -> dict[str, Any]:
    """A result.json document the contract accepts: succeeded, no measurements."""
    return {
        "schema_version": 1,
        "kind": kind,
        "status": "succeeded",
        "started_at": "2026-01-01T00:00:00Z",
        "finished_at": "2026-01-01T00:00:01Z",
        "environment": None,
        "measurements": [],
        "summary": {},
        "artifacts": [],
        "error": None,
        **fields,
    }
