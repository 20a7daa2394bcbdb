"""Stored results crafted for the roadmap's criteria: sources, scans, benchmarks."""

from __future__ import annotations

import copy
import hashlib
import io
import json
import tempfile
from pathlib import Path

import pytest
from django.utils import timezone

from jobs.choices import JobStatus
from jobs.models import Environment, Measurement
from stack.kinds import blas_bench, compile_check, hipify_scan
from teams.models import SourceSnapshot
from tests.factories import make_job, make_project, make_team


@pytest.fixture
def project(db):
    return make_project(make_team(), name="port")


def ready_source(project) -> SourceSnapshot:
    return SourceSnapshot.objects.create(
        project=project, origin="upload", status=SourceSnapshot.Status.READY, name="code.tar.gz"
    )


def scan(
    project, source, *, unsupported: int = 3, hours: float = 120.0, cuda_refs: int = 400, **summary
):
    return make_job(
        project.team,
        project=project,
        source=source,
        kind=hipify_scan.KIND.name,
        status=JobStatus.SUCCEEDED,
        finished_at=timezone.now(),
        summary={
            "totals": {"files": 12, "cuda_refs": cuda_refs},
            "warnings_by_kind": {"unsupported": {"total": unsupported, "code": unsupported}},
            "effort": {"hours": hours},
            "top_apis": [],
            **summary,
        },
    )


# One API HIP lacks (a graph call), one device function it lacks (a warp shuffle with a
# 32-lane mask), and the project's own comment naming another: only code counts.
GAPS_CU = """\
#include <cuda_runtime.h>
// cuTexRefSetArray was how this used to work
__global__ void reduce(float* x) {
  float v = x[threadIdx.x];
  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffff, v, o);
  if (threadIdx.x == 0) x[0] = v;
}
int run(float* d, cudaGraphExec_t e) {
  reduce<<<1, 32>>>(d);
  cudaGraphExecNodeSetParams(e, nullptr, nullptr);
  return 0;
}
"""
# The same kernel with NVSHMEM included too: a library with no drop-in HIP counterpart.
NVIDIA_ONLY_CU = GAPS_CU.replace(
    "#include <cuda_runtime.h>\n", "#include <cuda_runtime.h>\n#include <nvshmem.h>\n"
)


def real_scan(project, files: dict[str, str], *, source=None, **params):
    """A succeeded scan job whose summary is what the hipify-scan runner wrote for
    ``files`` (its fast engine reads hipify-perl's tables, in this process): the decision
    layer is tested on what a real scan records, never on hand-written keys."""
    from stack.events import Emitter
    from stack.kinds import validate_params
    from stack.kinds.hipify_scan import run
    from stack.runtime import RunContext

    source = source or ready_source(project)
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch) / "work"
        for rel, text in files.items():
            (work / "src" / rel).parent.mkdir(parents=True, exist_ok=True)
            (work / "src" / rel).write_text(text)
        out = Path(scratch) / "out"
        out.mkdir()
        ctx = RunContext(out=out, emit=Emitter(io.StringIO()), work=work, cache_dir=None)
        result = run(validate_params(hipify_scan.KIND.name, params), ctx)
    job = make_job(
        project.team,
        project=project,
        source=source,
        kind=hipify_scan.KIND.name,
        status=JobStatus.SUCCEEDED,
        finished_at=timezone.now(),
        summary=result.summary,
    )
    # What the job-finished signal does once a real scan's job commits.
    from jobs.receivers import job_succeeded

    job_succeeded("jobs.Job", job_id=job.pk, status=JobStatus.SUCCEEDED)
    return job


def environment(vendor: str, model: str) -> Environment:
    data = {"gpu": {"vendor": vendor, "model": model}}
    digest = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()
    return Environment.objects.create(
        data_sha256=digest,
        fingerprint=digest,
        data=data,
        gpu_vendor=vendor,
        gpu_model=model,
        gpu_count=1,
    )


def benchmark(project, env: Environment, rates: dict[int, float]):
    job = make_job(
        project.team,
        project=project,
        kind=blas_bench.KIND.name,
        status=JobStatus.SUCCEEDED,
        finished_at=timezone.now(),
        environment=env,
    )
    for size, rate in rates.items():
        Measurement.objects.create(
            job=job, environment=env, benchmark="gemm",
            case={"precision": "bf16", "m": size, "n": size, "k": size},
            metric="throughput", unit="TFLOP/s", value=rate, samples=[rate], better="higher",
        )  # fmt: skip
    return job


def compile_job(
    project, source, per_target: dict, *, executor: str = "docker", image: str = "rocpath/debian"
):
    return make_job(
        project.team,
        project=project,
        source=source,
        kind=compile_check.KIND.name,
        status=JobStatus.SUCCEEDED,
        finished_at=timezone.now(),
        executor=executor,
        image=image,
        summary={"per_target": per_target},
    )


H200 = Path(__file__).resolve().parents[2] / "docs" / "results" / "blas-bench-h200.json"


def h200_document() -> dict:
    """The real blas-bench result document of an H200 run (docs/results)."""
    return json.loads(H200.read_text())


def derived(
    document: dict,
    factors: dict[str, float] | None = None,
    default: float = 1.0,
    *,
    vendor: str = "amd",
    model: str = "AMD Instinct MI300X",
    arch: str = "gfx942",
) -> dict:
    """The same cases on another GPU: throughput (and % of peak, samples too) scaled by a
    factor per precision, the environment's GPU renamed. A synthetic candidate with the
    keys a real run writes."""
    doc = copy.deepcopy(document)
    doc["environment"]["gpus"] = [
        {**doc["environment"]["gpus"][0], "vendor": vendor, "model": model, "arch": arch,
         "uuid": f"GPU-derived-{model}"}
    ]  # fmt: skip
    for m in doc["measurements"]:
        if m["metric"] in ("throughput", "pct_of_peak"):
            factor = (factors or {}).get(m["case"].get("precision"), default)
            m["value"] *= factor
            m["samples"] = [v * factor for v in m["samples"]]
    return doc


def ingest(project, document: dict):
    """A job of the project (of the document's kind: blas-bench, profile) that ran and
    handed back ``document``: stored by the worker's own ingest."""
    from django.db import transaction

    from jobs.services.ingest import ingest_result

    job = make_job(project.team, project=project, kind=document.get("kind", blas_bench.KIND.name),
                   status=JobStatus.RUNNING, worker="w@h")  # fmt: skip
    with transaction.atomic():
        ingest_result(job, document, None, exit_code=0)
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.error
    return job
