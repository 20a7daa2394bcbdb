"""Examples of the jobs API's requests and answers, for the OpenAPI schema (Swagger UI).

Shaped as the serializers answer (the schema tests check every operation has one); the
kind in them is the submit form's default, asked of the registry, never named here.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample

from stack.blas.gemm import FAMILY as GEMM
from stack.kinds import KINDS
from stack.kinds.blas_bench import KIND as BLAS_BENCH

FIRST_KIND = next(k for k in KINDS.values() if k.submit_default)
WHEN = "2026-12-01T09:30:00Z"

JOB: dict[str, Any] = {
    "id": 42,
    "kind": FIRST_KIND.name,
    "params": FIRST_KIND.defaults(),
    "team": "gpu-lab",
    "project": None,
    "source": None,
    "created_by": "alice",
    "status": "succeeded",
    "launch_type": "api",
    "progress": 100.0,
    "progress_message": "done",
    "requested_hardware": {},
    "executor": "local",
    "image": "",
    "image_digest": "",
    "timeout_s": FIRST_KIND.default_timeout_s,
    "created_at": WHEN,
    "queued_at": WHEN,
    "started_at": "2026-12-01T09:30:01Z",
    "finished_at": "2026-12-01T09:30:04Z",
    "cancel_requested_at": None,
    "duration_s": 3.1,
    "exit_code": 0,
    "error": "",
    "attempt": 1,
    "worker": "celery@gpu-node-7",
    "task_id": "5f0c7c1e-3b7a-4c0e-9a51-2d1c2f7e8a90",
    "environment": 7,
    "summary": {},
    "rerun_of": None,
    "links": {
        "self": "/api/v1/jobs/42/",
        "events": "/api/v1/jobs/42/events/",
        "artifacts": "/api/v1/jobs/42/artifacts/",
        "measurements": "/api/v1/jobs/42/measurements/",
        "cancel": "/api/v1/jobs/42/cancel/",
        "page": "/jobs/42/",
    },
}


def page(row: dict[str, Any]) -> dict[str, Any]:
    """One row of a list's page: drf-spectacular wraps it in the pagination's answer."""
    return row


def example(name: str, value: Any, *, request: bool = False, **kwargs: Any) -> OpenApiExample:
    """One example, of the answer unless ``request``."""
    return OpenApiExample(
        name, value=value, request_only=request, response_only=not request, **kwargs
    )


SUBMIT = example(
    "the first kind, defaults", {"kind": FIRST_KIND.name, "team": "gpu-lab"}, request=True
)
SUBMIT_SWEEP = example(
    "a small benchmark sweep",
    {"kind": BLAS_BENCH.name, "params": dict(BLAS_BENCH.example_params or {}), "team": "gpu-lab"},
    request=True,
    description="Two precisions of three sizes: a minute or so, even on a CPU.",
)
JOB_EXAMPLE = example("a finished job", JOB)
SUBMITTED = example(
    "queued", {**JOB, "status": "queued", "finished_at": None}, status_codes=["201"]
)
WAITING = example(
    "kept while the broker is down",
    {**JOB, "status": "pending", "detail": "queued once the broker is back"},
    status_codes=["202"],
)
ARTIFACT_FILE = example(
    "a text artifact",
    "GPU[0] : Card series: AMD Instinct MI300X\n",
    media_type="application/octet-stream",
)
JOBS_EXAMPLE = example("one page of jobs", page(JOB))
RUNNING = example(
    "cancel requested",
    {**JOB, "status": "running", "cancel_requested_at": WHEN, "exit_code": None},
    status_codes=["202"],
)
RERUN = example("the new job", {**JOB, "id": 43, "rerun_of": 42, "status": "queued"})

EVENTS = example(
    "the log after event 120",
    {
        "events": [
            {
                "id": 121,
                "created_at": WHEN,
                "kind": "log",
                "level": "info",
                "message": "torch: cuda:0 NVIDIA H200 (cuBLAS)",
                "pct": None,
                "data": {},
            },
            {
                "id": 122,
                "created_at": WHEN,
                "kind": "progress",
                "level": "info",
                "message": "torch gemm bf16 4096x4096x4096 NN",
                "pct": 40.0,
                "data": {},
            },
        ],
        "next_cursor": 122,
        "status": "running",
        "progress": 40.0,
        "active": True,
    },
)
ARTIFACTS = example(
    "a job's files",
    page(
        {
            "id": 9,
            "path": "probe/rocm-smi.txt",
            "size": 4812,
            "sha256": "3b1f0c4e9a7d2c5b8e6f1a0d9c4b7e2f5a8d1c6b9e0f3a7d4c1b8e5f2a9d6c3b",
            "content_type": "text/plain",
            "description": "raw output of rocm-smi --showallinfo",
            "download": "/api/v1/jobs/42/artifacts/9/download/",
        }
    ),
)
MEASUREMENTS = example(
    "a GEMM throughput",
    page(
        {
            "id": 5001,
            "job": 42,
            "environment": 7,
            "benchmark": GEMM,
            "case": {"backend": "torch", "precision": "bf16", "m": 4096, "n": 4096, "k": 4096},
            "metric": "throughput",
            "unit": "TFLOP/s",
            "value": 702.4,
            "samples": [701.9, 702.4, 703.0],
            "better": "higher",
            "created_at": WHEN,
        }
    ),
)
ENVIRONMENT: dict[str, Any] = {
    "id": 7,
    "fingerprint": "9c1e4b7a2d5f8c3e",
    "hostname": "gpu-node-7",
    "cpu_model": "AMD EPYC 9654",
    "gpu_vendor": "AMD",
    "gpu_model": "AMD Instinct MI300X",
    "gpu_arch": "gfx942",
    "gpu_count": 8,
    "gpu_driver": "6.8.5",
    "rocm_version": "6.2.1",
    "cuda_version": "",
    "image": "rocm/pytorch:rocm6.2",
    "image_digest": "sha256:4f1c0e9b",
    "data_sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "first_seen_at": WHEN,
    "data": {"host": {"hostname": "gpu-node-7", "cpu_cores": 192}, "gpus": []},
}
ENVIRONMENT_EXAMPLE = example("an MI300X node", ENVIRONMENT)
ENVIRONMENTS = example("the environments of your teams' jobs", page(ENVIRONMENT))
KINDS_EXAMPLE = example(
    "the kinds (one shown)",
    [
        {
            "name": FIRST_KIND.name,
            "title": FIRST_KIND.title,
            "description": FIRST_KIND.description,
            "default_timeout_s": FIRST_KIND.default_timeout_s,
            "params_schema": FIRST_KIND.params_schema,
        }
    ],
)
TOKEN = example(
    "a new token",
    {
        "token": "0f9e8d7c6b5a49382716f5e4d3c2b1a0ffeeddcc",
        "created": WHEN,
        "expires_at": "2027-03-01T09:30:00Z",
    },
)

# --- The fleet (issue 16, pages) ------------------------------------------------------

QUEUED_JOB = example(
    "a job waiting on a queue nobody consumes now",
    {
        **JOB,
        "id": 44,
        "status": "queued",
        "started_at": None,
        "finished_at": None,
        "duration_s": None,
        "exit_code": None,
        "worker": "",
        "environment": None,
        "waiting": {
            "queue": "gpu-amd-gfx942",
            "default_queue": False,
            "route_note": "asks for arch gfx942: only the workers with an MI300X consume it",
            "live_workers": [],
            "busy_workers": [],
            "note": "no live worker consumes this queue now: it will wait until one does or "
            "the reaper ends it after ROCPATH_QUEUED_GRACE_S (86400 s).",
        },
    },
)
FINISHED_JOB_DETAIL = example("a finished job", {**JOB, "waiting": None})

WORKER: dict[str, Any] = {
    "id": 3,
    "name": "celery@gpu-node-7",
    "host": "gpu-node-7",
    "executor": "docker",
    "queues": ["rocpath", "gpu-amd-gfx942"],
    "state": "live",
    "gpus": [
        {
            "count": 8,
            "vendor": "amd",
            "model": "AMD Instinct MI300X",
            "arch": "gfx942",
            "memory_bytes": 206158430208,
        }
    ],
    "inventory": {
        "gpus": [
            {
                "index": i,
                "vendor": "amd",
                "model": "AMD Instinct MI300X",
                "arch": "gfx942",
                "memory_bytes": 206158430208,
            }
            for i in range(8)
        ],
        "software": {"rocm_version": "6.2.1", "cuda_version": None},
        "images": ["rocm/pytorch:rocm6.2", "sha256:4f1c0e9b"],
        "cpus": 192,
        "memory_mb": 2064384,
    },
    "jobs_running": 1,
    "jobs": [{"id": 42, "kind": FIRST_KIND.name, "status": "running", "link": "/api/v1/jobs/42/"}],
    "started_at": "2026-12-01T08:00:00Z",
    "last_seen_at": WHEN,
    "last_seen_s_ago": 4,
    "stopped_at": None,
    "links": {"self": "/api/v1/workers/3/", "page": "/workers/3/"},
}
WORKER_EXAMPLE = example("a live MI300X host running one of your jobs", WORKER)
WORKERS_EXAMPLE = example("the fleet (one worker shown)", page(WORKER))
