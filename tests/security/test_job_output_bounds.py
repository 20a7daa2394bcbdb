"""What a job can make the worker store or hold: every output bounded, every cap within the host.

The unit tests drive the real readers (DatabaseHooks against PostgreSQL, the docker
reader fed a stream, through the follow loop); the ones marked integration run jobs in
real containers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import docker
import pytest
from django.db.models import Sum
from django.db.models.functions import Length

from jobs import services
from jobs.choices import JobStatus
from jobs.executors.base import ExecutorError, JobSpec, Outcome, Started, follow
from jobs.executors.docker import ContainerOutput, container_params, limits_for
from jobs.executors.gpu_profiles import NO_GPU
from jobs.executors.outwatch import out_folder_problem
from jobs.models import JobEvent
from tests.factories import make_job
from tests.hooks import Recorder
from tests.waits import JOB_S, LINEAR_RATIO
from tests.workers import TERMINAL, _start_worker, wait_for_status, wait_until

ROOT = Path(__file__).resolve().parents[2]
MiB = 1024 * 1024


def test_300_lines_of_1_mib_keep_the_jobs_log_within_its_byte_cap(team, settings):
    settings.ROCPATH_EVENT_BYTES_MAX = 4 * MiB
    job = make_job(team, status=JobStatus.RUNNING)
    hooks = services.DatabaseHooks(job)
    line = "x" * MiB
    for _ in range(300):
        hooks.on_line(line, "stdout")
    hooks.on_event({"event": "progress", "pct": 80, "message": "still going"})
    hooks.close()
    events = JobEvent.objects.filter(job=job)
    stored = events.aggregate(total=Sum(Length("message")))["total"]
    assert stored <= 4 * MiB + 1000
    cut = events.filter(message__startswith="log cut at")
    assert cut.count() == 1 and "ROCPATH_EVENT_BYTES_MAX" in cut.get().message
    assert max(len(m) for m in events.values_list("message", flat=True)) <= 64 * 1024 + 100
    job.refresh_from_db()
    assert job.progress == 80 and job.progress_message == "still going"  # still honoured


class _Stream:
    """A container whose output is one 100 MB line without a newline, then a short one."""

    def __init__(self, total: int, chunk: int = 32 * 1024) -> None:
        self.total, self.chunk = total, chunk

    def attach(self, **_: object):
        block = b"y" * self.chunk
        for _ in range(self.total // self.chunk):
            yield block, None
        yield b"\nthe line after\n", b"err without newline"


class _Reading(Started):
    """The docker engine's output reader over a stream, with nothing to stop."""

    def __init__(self, container: _Stream) -> None:
        self.output = ContainerOutput(container.attach(stream=True, demux=True))

    def read(self, timeout: float) -> list[tuple[str, bytes]] | None:
        return self.output.read(timeout)

    def stop(self) -> None:
        pass

    def wait(self, outcome: Outcome) -> None:
        outcome.exit_code = 0


def _fastest(run, times: int = 3) -> float:
    best = float("inf")
    for _ in range(times):
        started = time.monotonic()
        run()
        best = min(best, time.monotonic() - started)
    return best


def test_a_100_mb_line_without_a_newline_is_cut_and_read_in_linear_time(settings, tmp_path):
    settings.ROCPATH_EVENT_LINE_MAX_BYTES = 64 * 1024
    spec = JobSpec(job_id=1, kind="noop", job_dir=tmp_path, timeout_s=60)
    # Each size the best of three: one pause of a loaded machine (a clean-clone CI beside
    # other work saw 0.5 s once for what takes milliseconds) must not read as quadratic.
    reference = _fastest(lambda: follow(_Reading(_Stream(10 * 1000 * 1000)), spec, Recorder()))
    hooks = Recorder()
    outcome = follow(_Reading(_Stream(100 * 1000 * 1000)), spec, hooks)
    elapsed = _fastest(lambda: follow(_Reading(_Stream(100 * 1000 * 1000)), spec, Recorder()))
    assert elapsed < LINEAR_RATIO * reference, (
        f"{elapsed:.1f} s for 100 MB, {reference:.2f} s for 10"
    )
    (stream, first), second, third = hooks.lines
    assert stream == "stdout" and first.startswith("y" * 1000)
    assert first.endswith("[line cut at 65536 bytes]") and len(first) < 64 * 1024 + 100
    assert second == ("stdout", "the line after")
    assert third == ("stderr", "err without newline")
    assert outcome.stderr_tail == ["err without newline"]


def test_a_job_asking_for_more_memory_or_cpus_than_the_host_has_is_refused(settings):
    with pytest.raises(ExecutorError, match=r"hardware\.memory_mb: the job asks for \d+ MiB"):
        limits_for({"memory_mb": settings.HOST_MEMORY_MB * 2})
    with pytest.raises(ExecutorError, match=r"hardware\.cpus: the job asks for"):
        limits_for({"cpus": settings.HOST_CPUS + 1})


def test_the_container_caps_are_derived_from_the_host(settings):
    assert settings.ROCPATH_DOCKER_MAX_MEMORY_MB <= settings.HOST_MEMORY_MB * 3 // 4
    assert settings.ROCPATH_DOCKER_MEMORY_MB <= settings.ROCPATH_DOCKER_MAX_MEMORY_MB
    assert settings.ROCPATH_DOCKER_MAX_CPUS <= settings.HOST_CPUS
    default_cpus = settings.ROCPATH_DOCKER_CPUS
    assert default_cpus <= max(1, settings.HOST_CPUS // 2)
    assert settings.ROCPATH_DOCKER_MAX_PIDS <= 1024


@pytest.mark.process
def test_an_operator_cap_above_the_host_stops_the_start_up(settings):
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "ROCPATH_DOCKER_MAX_MEMORY_MB": str(settings.HOST_MEMORY_MB * 4),
    }
    started = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert started.returncode != 0
    assert "ROCPATH_DOCKER_MAX_MEMORY_MB" in started.stderr
    assert "more than this host has" in started.stderr


def test_the_engines_own_log_of_a_container_is_capped(tmp_path, settings):
    settings.ROCPATH_DOCKER_LOG_MAX_MB = 16
    spec = JobSpec(job_id=1, kind="noop", job_dir=tmp_path, timeout_s=60, image="i")
    log = container_params(spec, NO_GPU)["log_config"]
    assert log["Type"] == "json-file"
    assert log["Config"] == {"max-size": "8m", "max-file": "2"}


def test_no_file_in_a_container_can_grow_past_the_artifact_cap(tmp_path, settings):
    settings.ROCPATH_ARTIFACT_MAX_BYTES = 5 * MiB
    spec = JobSpec(job_id=1, kind="noop", job_dir=tmp_path, timeout_s=60, image="i")
    (fsize,) = [u for u in container_params(spec, NO_GPU)["ulimits"] if u["Name"] == "fsize"]
    assert fsize["Soft"] == fsize["Hard"] == 5 * MiB


# --- in real containers -----------------------------------------------------------
@pytest.fixture
def capped_worker(transactional_db, settings, tmp_path, job_image):
    """A docker worker whose out folders are capped at 64 MiB."""
    settings.ROCPATH_EXECUTOR = "docker"
    settings.ROCPATH_IMAGE = job_image
    handle = _start_worker(
        settings,
        tmp_path,
        ROCPATH_EXECUTOR="docker",
        ROCPATH_IMAGE=job_image,
        ROCPATH_OUT_MAX_BYTES=str(64 * MiB),
    )
    yield handle
    handle.stop()


def _submit(api, kind: str, params: dict, **extra) -> int:
    response = api.post("/api/v1/jobs/", {"kind": kind, "params": params, **extra}, format="json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


@pytest.mark.containers
@pytest.mark.integration
@pytest.mark.slow
def test_a_container_asking_for_more_memory_than_the_host_has_ends_errored(
    docker_worker, api, settings
):
    asked = settings.HOST_MEMORY_MB * 2
    job_id = _submit(api, "noop", {}, hardware={"memory_mb": asked})
    job = wait_for_status(job_id, TERMINAL, timeout=JOB_S)
    assert job.status == JobStatus.ERRORED
    assert f"the job asks for {asked} MiB, this worker's cap is" in job.error


@pytest.mark.containers
@pytest.mark.integration
@pytest.mark.slow
def test_a_real_containers_log_driver_is_capped(docker_worker, api):
    job_id = _submit(api, "noop", {"seconds": 60, "steps": 60})
    engine = docker.from_env()
    found = []
    assert wait_until(
        lambda: (
            found.extend(
                engine.containers.list(all=True, filters={"label": f"rocpath.job={job_id}"})
            )
            or found
        ),
        30,
        0.1,
    )
    log = found[0].attrs["HostConfig"]["LogConfig"]
    assert log["Type"] == "json-file" and log["Config"]["max-size"] and log["Config"]["max-file"]
    assert api.post(f"/api/v1/jobs/{job_id}/cancel/").status_code == 202
    wait_for_status(job_id, TERMINAL, timeout=JOB_S)


def test_an_out_folder_over_its_cap_names_its_largest_file_not_result_json(tmp_path, settings):
    settings.ROCPATH_OUT_MAX_BYTES = 4096
    spec = JobSpec(job_id=1, kind="noop", job_dir=tmp_path, timeout_s=60)
    (spec.out_dir / "logs").mkdir(parents=True)
    (spec.out_dir / "result.json").write_text("{}")
    (spec.out_dir / "logs" / "small.txt").write_bytes(b"x" * 100)
    (spec.out_dir / "logs" / "dump.bin").write_bytes(b"x" * 8192)

    problem = out_folder_problem(spec)
    assert "its out folder went over its cap of 4096 bytes" in problem, problem
    assert "the largest out/logs/dump.bin at 8192 bytes" in problem, problem
    assert "result.json" not in problem


@pytest.mark.containers
@pytest.mark.integration
@pytest.mark.slow
def test_a_container_writing_past_the_out_folder_cap_is_stopped(capped_worker, api):
    # 1 GiB is the most one file may be (ROCPATH_JOB_MAX_FILE_MB); the folder cap is 64 MiB.
    job_id = _submit(api, "noop", {"write_bytes": 1024**3})
    job = wait_for_status(job_id, TERMINAL, timeout=JOB_S)
    assert job.status == JobStatus.ERRORED, job.error
    assert "out folder went over its cap of 67108864 bytes" in job.error
    seen = int(job.error.split("(")[1].split()[0])
    final = int(job.error.split("; ")[-1].split()[0])
    assert final < 512 * MiB, job.error  # stopped within a fraction of a second, not at 1 GiB
    assert not job.artifacts.exists()
    print(f"out/ held {seen / MiB:.0f} MiB when seen over, {final / MiB:.0f} MiB once killed")


@pytest.mark.containers
@pytest.mark.integration
@pytest.mark.slow
def test_a_container_linking_result_json_to_another_jobs_result_shows_nothing_of_it(
    db, team, job_image, monkeypatch
):
    """The attack of issue 9 in a real container: a link, then `chmod 555 out`."""
    from jobs.executors import docker as docker_executor

    other = make_job(team, status=JobStatus.SUCCEEDED)
    theirs = services.job_dir(other.pk) / "out" / "result.json"
    theirs.parent.mkdir(parents=True)
    theirs.write_text(json.dumps({"summary": {"secret": "other team"}}))
    job = make_job(team, status=JobStatus.RUNNING, worker="w@h")
    spec = JobSpec(
        job_id=job.pk, kind="noop", job_dir=services.job_dir(job.pk), timeout_s=60, image=job_image
    )
    spec.job_dir.mkdir(parents=True)
    spec.params_file.write_text("{}")
    real = docker_executor.container_params

    def hostile(spec: JobSpec, gpu):
        params = real(spec, gpu)
        params["entrypoint"] = ["sh", "-c"]
        params["command"] = [f"ln -s {theirs} /job/out/result.json && chmod 555 /job/out"]
        return params

    monkeypatch.setattr(docker_executor, "container_params", hostile)

    class Hooks:
        def on_event(self, event):
            pass

        def on_line(self, line, stream):
            pass

        def should_cancel(self):
            return False

        def heartbeat(self):
            pass

    try:
        outcome = docker_executor.DockerExecutor().run(spec, Hooks())
    finally:  # removal runs in a daemon thread that a test process may not wait for
        docker_executor.remove_containers(jobs={job.pk})
    assert isinstance(outcome, Outcome) and outcome.exit_code == 0
    services.conclude(job, spec, outcome)
    job.refresh_from_db()
    assert job.status == JobStatus.ERRORED and "result.json is a symbolic link" in job.error
    assert "other team" not in json.dumps(job.summary) + job.error
