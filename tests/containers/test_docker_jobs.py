"""Jobs in containers on the real Docker engine: REST → Celery → Docker → PostgreSQL."""

from __future__ import annotations

import docker
import pytest

from jobs import services
from jobs.choices import JobStatus
from jobs.executors.docker import LABEL_JOB
from tests.waits import JOB_S, LONG_JOB_S, STOP_S
from tests.workers import TERMINAL, submit_long_job, wait_for_status, wait_until

pytestmark = [pytest.mark.containers, pytest.mark.integration, pytest.mark.slow]


def submit(api, kind: str, params: dict | None = None, **extra) -> int:
    response = api.post(
        "/api/v1/jobs/", {"kind": kind, "params": params or {}, **extra}, format="json"
    )
    assert response.status_code == 201, response.content
    return response.json()["id"]


def gone(job_id: int, timeout: float = STOP_S) -> bool:
    """Whether the job's containers are removed (removal runs beside the ingest)."""
    return wait_until(lambda: not containers_of(job_id), timeout, 0.1)


def long_job_with_container(api, *, running: bool = False) -> int:
    """A two-minute noop whose container exists (and runs, if asked) on the engine."""
    job_id = submit_long_job(api)
    assert wait_until(
        lambda: [c for c in containers_of(job_id) if not running or c["State"] == "running"],
        30,
        0.1,
    ), "the container never appeared"
    return job_id


def containers_of(job_id: int) -> list[dict]:
    """The job's containers as the engine lists them (id, State), without inspecting each."""
    engine = docker.from_env()
    return engine.api.containers(all=True, filters={"label": f"{LABEL_JOB}={job_id}"})


def test_a_probe_runs_in_the_debian_image_and_records_its_digest(docker_worker, api, job_image):
    job = wait_for_status(submit(api, "probe"), TERMINAL, timeout=LONG_JOB_S)
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert job.executor == "docker" and job.image == job_image
    digest = docker.from_env().images.get(job_image).id
    assert job.image_digest == digest
    env = job.environment
    assert env.image_digest == digest
    assert "trixie" in env.data["host"]["os"]
    assert env.data["tools"]["rocminfo"]["present"] is True  # the image carries ROCm's tools
    assert gone(job.pk)  # removed once done


def test_a_job_cannot_write_outside_its_out_folder(docker_worker, api):
    job = wait_for_status(submit(api, "sandbox-check", {"action": "write-outside"}), TERMINAL)
    assert job.status == JobStatus.FAILED, job.summary
    assert job.summary["written"] == []
    assert any("Read-only file system" in r for r in job.summary["refused"])


def test_a_job_cannot_open_a_network_connection(docker_worker, api):
    job = wait_for_status(submit(api, "sandbox-check", {"action": "network"}), TERMINAL)
    assert job.status == JobStatus.FAILED, job.summary
    assert job.summary["interfaces"] == ["lo"]
    assert "unreachable" in job.error.lower()


def test_a_fork_bomb_is_stopped_by_the_pids_limit(docker_worker, api):
    job_id = submit(
        api, "sandbox-check", {"action": "fork-bomb", "max_processes": 5000}, hardware={"pids": 64}
    )
    job = wait_for_status(job_id, TERMINAL, timeout=LONG_JOB_S)
    assert job.status == JobStatus.FAILED, job.error
    assert "fork refused" in job.error
    assert job.summary["processes_started"] < 64


def test_a_memory_hog_is_oom_killed_and_reported_as_such(docker_worker, api):
    job_id = submit(
        api,
        "sandbox-check",
        {"action": "allocate-memory", "megabytes": 1024},
        hardware={"memory_mb": 128},
    )
    job = wait_for_status(job_id, TERMINAL, timeout=LONG_JOB_S)
    assert job.status == JobStatus.ERRORED
    assert "out of memory" in job.error and "128 MiB" in job.error


def test_a_job_past_its_timeout_is_killed_and_reported(docker_worker, api):
    job_id = submit(api, "noop", {"seconds": 120, "steps": 120}, timeout_s=3)
    job = wait_for_status(job_id, TERMINAL, timeout=JOB_S)
    assert job.status == JobStatus.ERRORED and job.error == "timed out after 3 s"
    assert gone(job_id)


def test_cancel_removes_the_container(docker_worker, api):
    job_id = long_job_with_container(api, running=True)
    assert api.post(f"/api/v1/jobs/{job_id}/cancel/").status_code == 202
    job = wait_for_status(job_id, TERMINAL, timeout=JOB_S)
    assert job.status == JobStatus.CANCELED
    assert gone(job_id)


def test_a_worker_sigkilled_mid_job_leaves_no_container_once_reaped(docker_worker, api, settings):
    job_id = long_job_with_container(api)

    docker_worker.sigkill_main_process()
    assert containers_of(job_id), "the engine keeps the container after its worker died"
    settings.ROCPATH_RUNNING_GRACE_S = 1
    assert wait_until(lambda: services.reap_stuck_jobs() == [job_id], STOP_S, 0.5)
    assert services.sweep_containers()  # what every worker does when the reaper broadcasts
    assert containers_of(job_id) == []
    job = wait_for_status(job_id, TERMINAL)
    assert job.status == JobStatus.ERRORED and "worker lost" in job.error


def test_a_restarted_worker_removes_the_containers_of_its_previous_life(docker_worker, api):
    job_id = long_job_with_container(api)
    docker_worker.sigkill_main_process()
    docker_worker.start()
    job = wait_for_status(job_id, TERMINAL, timeout=JOB_S)
    assert job.status == JobStatus.ERRORED and "restarted" in job.error
    assert gone(job_id)


def test_a_missing_image_is_an_errored_job_that_says_how_to_build_it(docker_worker, api):
    job = wait_for_status(submit(api, "noop", image="rocpath/not-built:never"), TERMINAL)
    assert job.status == JobStatus.ERRORED
    assert "scripts/build-images.sh" in job.error


def test_a_blas_bench_on_numpy_runs_in_the_debian_image_and_stores_measurements(docker_worker, api):
    params = {
        "families": ["gemm"],
        "backends": ["numpy"],
        "device": "cpu",
        "precisions": ["fp64", "fp32"],
        "sizes": [64, 128],
    }
    job = wait_for_status(submit(api, "blas-bench", params), TERMINAL, timeout=LONG_JOB_S)
    assert job.status == JobStatus.SUCCEEDED, job.error
    throughput = job.measurements.filter(benchmark="gemm", metric="throughput")
    cases = {(m.case["precision"], m.case["m"]) for m in throughput}
    assert cases == {("fp64", 64), ("fp64", 128), ("fp32", 64), ("fp32", 128)}
    for m in throughput:
        assert m.unit == "TFLOP/s" and 0 < m.value < 50  # a CPU, not a miracle
        assert len(m.samples) >= 3
    assert job.environment is not None and job.environment.image_digest == job.image_digest


PLANTED = """#include <cuda_runtime.h>
__global__ void scale(float* x, float a) { x[threadIdx.x] *= a; }
int main() {
  float* d;
  cudaMalloc(&d, 1024);
  scale<<<1, 256>>>(d, 2.0f);
  this_is_not_declared(d);
  cudaFree(d);
  return 0;
}
"""


def _project_with_source(api, text: str) -> int:
    import io
    import zipfile

    from django.core.files.uploadedfile import SimpleUploadedFile

    team = api.get("/api/v1/teams/").json()["results"][0]["slug"]
    project = api.post("/api/v1/projects/", {"team": team, "name": "ported"}, format="json")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("src/main.cu", text)
    upload = SimpleUploadedFile("code.zip", buffer.getvalue())
    pid = project.json()["id"]
    added = api.post(f"/api/v1/projects/{pid}/sources/", {"archive": upload}, format="multipart")
    assert added.status_code == 201
    # The worker extracts it after the commit.
    source = f"/api/v1/projects/{pid}/sources/"
    assert wait_until(lambda: api.get(source).json()["results"][0]["status"] == "ready", JOB_S, 0.1)
    return pid


def test_a_hipify_scan_runs_in_the_debian_image_on_the_projects_source(docker_worker, api):
    project = _project_with_source(api, PLANTED)
    job = wait_for_status(submit(api, "hipify-scan", project=project), TERMINAL, timeout=LONG_JOB_S)
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert job.summary["totals"]["files"] == 1
    assert job.summary["tool"]["hip_version"]  # the image's own hipify-perl
    assert job.artifacts.filter(path="hipify/findings.json").exists()


def test_compile_check_in_the_debian_image_reports_a_planted_error_at_its_line(docker_worker, api):
    project = _project_with_source(api, PLANTED)
    job_id = submit(api, "compile-check", {"targets": ["gfx942", "gfx90a"]}, project=project)
    job = wait_for_status(job_id, TERMINAL, timeout=LONG_JOB_S)
    assert job.status == JobStatus.FAILED, job.error  # the tool ran and said no
    errors = job.summary["first_errors"]
    planted = [e for e in errors if "this_is_not_declared" in e["message"]]
    assert planted, errors
    assert {e["target"] for e in planted} == {"gfx942", "gfx90a"}
    # hipify-perl adds an include line to kernel files: the planted line 7 moves to 8.
    assert {e["line"] for e in planted} <= {7, 8}
