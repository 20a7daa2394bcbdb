"""The artifact root as a disk: a full one names its path and room, a bad one stops a worker.

The full disk is real: a small tmpfs the test mounts as ARTIFACT_ROOT (needs root, as
in .ci/run); the worker refusing to start is a real `celery worker` process.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobs import services
from jobs.choices import JobStatus
from jobs.models import Artifact, Job
from jobs.services.paths import artifact_dir, job_dir
from jobs.storage import free_mib
from tests.factories import make_job
from tests.waits import START_S
from tests.workers import CELERY, ROOT, wait_until, worker_env

pytestmark = pytest.mark.process

MIB = 2**20


@pytest.fixture
def small_disk(settings, tmp_path) -> Iterator[Path]:
    """An 8 MiB tmpfs as the artifact root, unmounted afterwards."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    root = tmp_path / "disk"
    root.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(root)], check=True)
    settings.ARTIFACT_ROOT = root
    try:
        yield root
    finally:
        subprocess.run(["umount", "-l", str(root)], check=False)


def _queued(team, **params) -> Job:
    job = make_job(team, kind="noop", params={"seconds": 0, "steps": 1, **params})
    job.mark_queued("task-x")
    return job


def test_a_job_that_fills_the_disk_ends_errored_naming_the_path_and_the_room_left(team, small_disk):
    # out/noop.bin (5 MiB) fits; its copy into artifacts/ cannot: the disk fills mid-copy.
    job = _queued(team, write_bytes=5 * MIB)
    assert services.execute_job(job.pk, worker="w@h") == "errored: could not store the result"
    job.refresh_from_db()
    assert job.status == JobStatus.ERRORED
    copy = artifact_dir(job.pk) / "noop.bin"
    assert job.error.startswith(f"could not store the result: writing {copy}: the disk holding")
    assert "MiB free (No space left on device)" in job.error
    # nothing half-copied is left, and no row points at a file that is not there
    assert not artifact_dir(job.pk).exists() and not Artifact.objects.filter(job=job).exists()
    assert not (job_dir(job.pk) / "out").exists()
    assert free_mib(small_disk) >= 7

    again = _queued(team, write_bytes=MIB)
    assert services.execute_job(again.pk, worker="w@h") == JobStatus.SUCCEEDED
    assert (artifact_dir(again.pk) / "noop.bin").stat().st_size == MIB


def test_a_job_whose_folder_cannot_be_written_on_a_full_disk_names_it(team, small_disk):
    filler = small_disk / "filler"
    with filler.open("wb") as out, pytest.raises(OSError):
        while True:
            out.write(bytes(MIB))
    job = _queued(team)
    services.execute_job(job.pk, worker="w@h")
    job.refresh_from_db()
    assert job.status == JobStatus.ERRORED
    assert f"writing {job_dir(job.pk)}" in job.error and "has 0 MiB free" in job.error


def _worker_exit(settings, tmp_path, root: Path, **env: str) -> tuple[int, str]:
    """Start a real worker on ``root``; its exit code and output once it has stopped."""
    log = tmp_path / "worker.log"
    with log.open("w") as handle:
        proc = subprocess.Popen(
            [
                *(CELERY, "-A", "config", "worker", "-Q", "storage-check", "-n", "storage@%h"),
                *("-c", "1", "--without-gossip", "--without-mingle", "-l", "INFO"),
            ],
            cwd=ROOT,
            env=worker_env(settings, ROCPATH_ARTIFACT_ROOT=str(root), **env),
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            code = proc.wait(timeout=START_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
            code = None
    return code, log.read_text()


@pytest.mark.django_db(transaction=True)
def test_a_worker_refuses_to_start_on_a_read_only_artifact_root(settings, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("a read-only mount needs root (root writes through a folder's mode)")
    root = tmp_path / "ro"
    root.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(root)], check=True)
    try:
        started = time.monotonic()
        code, output = _worker_exit(settings, tmp_path, root)
    finally:
        subprocess.run(["umount", "-l", str(root)], check=False)
    assert code not in (0, None), output[-2000:]
    assert f"the artifact root {root} is not writable (Read-only file system)" in output
    assert " ready." not in output
    assert time.monotonic() - started < START_S  # refused at start, not after a job


@pytest.mark.django_db(transaction=True)
def test_a_worker_refuses_to_start_with_less_room_than_it_needs(settings, tmp_path, small_disk):
    code, output = _worker_exit(settings, tmp_path, small_disk, ROCPATH_MIN_FREE_MB="100")
    assert code not in (0, None), output[-2000:]
    assert f"the artifact root {small_disk} has 8 MiB free, less than the 100 MiB" in output
    assert " ready." not in output


@pytest.mark.django_db(transaction=True)
def test_a_control_worker_starts_on_a_read_only_artifact_root(settings, tmp_path):
    """It runs no job, and the reaper it serves is what ends the jobs a broken disk failed."""
    if os.geteuid() != 0:
        pytest.skip("a read-only mount needs root (root writes through a folder's mode)")
    root = tmp_path / "ro"
    root.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(root)], check=True)
    log = tmp_path / "control.log"
    queue = settings.ROCPATH_CONTROL_QUEUE
    try:
        with log.open("w") as handle:
            proc = subprocess.Popen(
                [
                    *(CELERY, "-A", "config", "worker", "-Q", queue, "-n", "control-check@%h"),
                    *("-c", "1", "--without-gossip", "--without-mingle", "-l", "INFO"),
                ],
                cwd=ROOT,
                env=worker_env(settings, ROCPATH_ARTIFACT_ROOT=str(root)),
                stdout=handle,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            wait_until(lambda: " ready." in log.read_text() or proc.poll() is not None, START_S)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, 9)
            proc.wait()
    finally:
        subprocess.run(["umount", "-l", str(root)], check=False)
    output = log.read_text()
    assert " ready." in output, output[-2000:]
    assert "does not start" not in output
