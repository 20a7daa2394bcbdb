"""Fixtures for tests that need a real Celery worker process (integration, browser)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from django.db import connection

from jobs.choices import TERMINAL_STATUSES, JobStatus
from jobs.models import Job, JobEvent
from tests.waits import JOB_S, START_S, STOP_S, wait_until

ROOT = Path(__file__).resolve().parents[1]
CELERY = str(Path(sys.executable).with_name("celery"))


@dataclass
class Worker:
    """One `celery worker` process group; restartable under the same name."""

    env: dict[str, str]
    name: str
    queue: str
    log: Path
    proc: subprocess.Popen | None = None
    starts: int = field(default=0)
    concurrency: int = 2
    pool: str = "prefork"
    also: tuple[str, ...] = ()  # more queues it consumes beside its own

    def start(self) -> None:
        self.starts += 1
        handle = self.log.open("a")
        self.proc = subprocess.Popen(
            [
                CELERY,
                "-A",
                "config",
                "worker",
                "-Q",
                ",".join((self.queue, *self.also)),
                "-n",
                self.name,
                "-c",
                str(self.concurrency),
                "-P",
                self.pool,
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                "-l",
                "INFO",
            ],
            cwd=ROOT,
            env=self.env,
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.wait_for_log(" ready.", self.starts)

    def wait_for_log(self, text: str, count: int = 1, timeout: float = JOB_S) -> None:
        deadline = time.monotonic() + timeout
        while self.log.read_text().count(text) < count:
            if self.proc and self.proc.poll() is not None:
                raise RuntimeError(f"worker exited:\n{self.log.read_text()[-3000:]}")
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"worker log never said {text!r}:\n{self.log.read_text()[-3000:]}"
                )
            time.sleep(0.1)

    def sigkill_main_process(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=STOP_S)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)


def worker_env(settings, **extra: str) -> dict[str, str]:
    db = connection.settings_dict
    env = dict(os.environ)
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings.test",
            "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
            "ROCPATH_ARTIFACT_ROOT": str(settings.ARTIFACT_ROOT),
            "ROCPATH_HEARTBEAT_S": "1",
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.update(extra)
    return env


def _start_worker(settings, tmp_path: Path, **env: str) -> Worker:
    queue = f"it-{uuid.uuid4().hex[:8]}"
    settings.CELERY_TASK_DEFAULT_QUEUE = queue
    # The comparisons a finished job queues, as make run's comparison worker takes them:
    # without it a baseline's verdicts were never written in the browser's flow.
    settings.ROCPATH_COMPARE_QUEUE = f"{queue}-compare"
    handle = Worker(
        env=worker_env(
            settings, ROCPATH_QUEUE=queue, ROCPATH_COMPARE_QUEUE=f"{queue}-compare", **env
        ),
        name=f"{queue}@%h",
        queue=queue,
        log=tmp_path / "worker.log",
        also=(f"{queue}-compare",),
    )
    handle.log.touch()
    handle.start()
    return handle


@pytest.fixture
def worker(transactional_db, settings, tmp_path) -> Iterator[Worker]:
    """A worker that runs jobs with the local executor."""
    handle = _start_worker(settings, tmp_path, ROCPATH_EXECUTOR="local")
    yield handle
    handle.stop()


@pytest.fixture
def docker_worker(transactional_db, settings, tmp_path, job_image) -> Iterator[Worker]:
    """A worker that runs jobs in containers of the debian job image."""
    settings.ROCPATH_EXECUTOR = "docker"
    settings.ROCPATH_IMAGE = job_image
    handle = _start_worker(settings, tmp_path, ROCPATH_EXECUTOR="docker", ROCPATH_IMAGE=job_image)
    yield handle
    handle.stop()


@pytest.fixture(scope="session")
def job_image() -> str:
    """The debian job image, built (or found in the layer cache) once per session.

    Without a Docker engine these tests cannot mean anything: in CI (.ci/run starts
    the engine) that is a failure, on a developer machine a skip that says why.
    """
    image = "rocpath/debian:latest"
    if subprocess.run(["docker", "info"], capture_output=True, check=False).returncode != 0:
        message = "no Docker engine answers: start dockerd (docs/containers.md)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    build = subprocess.run(
        [str(ROOT / "scripts" / "build-images.sh")], capture_output=True, text=True, check=False
    )
    assert build.returncode == 0, build.stdout + build.stderr
    return image


def wait_for_status(job_id: int, statuses: set[str], timeout: float = JOB_S) -> Job:
    if not wait_until(
        lambda: Job.objects.filter(pk=job_id, status__in=statuses).exists(), timeout, 0.1
    ):
        job = Job.objects.get(pk=job_id)
        raise TimeoutError(f"job {job_id} still {job.status} after {timeout} s: {job.error}")
    return Job.objects.get(pk=job_id)


def runner_group(job_id: int, timeout: float = START_S) -> int:
    """The process group of the job's runner, as the executor logged it."""
    deadline = time.monotonic() + timeout
    while True:
        event = JobEvent.objects.filter(job_id=job_id, message__startswith="runner started").first()
        if event is not None:
            return int(event.message.split("process group ")[1].split()[0])
        if time.monotonic() > deadline:
            raise TimeoutError(f"job {job_id}'s runner never started")
        time.sleep(0.05)


def processes(match: Callable[[list[str]], bool]) -> dict[int, list[str]]:
    """pid → [state, ppid, pgrp, session, …] of the live processes ``match`` accepts."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and match(fields):
            found[int(entry.name)] = fields
    return found


def children_of(pid: int) -> list[int]:
    """The processes whose parent is ``pid``: a worker's pool children, read from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            if ppid == pid:
                found.append(int(entry.name))
    return found


def group_alive(pgid: int) -> bool:
    """True while any process of the group is still there (zombies aside)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return bool(processes(lambda fields: int(fields[2]) == pgid))


def wait_until_gone(pgid: int, timeout: float = STOP_S) -> bool:
    return wait_until(lambda: not group_alive(pgid), timeout)


def submit_long_job(api) -> int:
    """A two-minute noop submitted over REST, returned once a worker runs it."""
    response = api.post(
        "/api/v1/jobs/", {"kind": "noop", "params": {"seconds": 120, "steps": 120}}, format="json"
    )
    assert response.status_code == 201, response.content
    job_id = response.json()["id"]
    wait_for_status(job_id, {JobStatus.RUNNING})
    return job_id


TERMINAL = TERMINAL_STATUSES
