"""What a job leaves in out/ is read as hostile: no link followed, nothing but regular files.

Each test prepares an out folder the way a hostile runner (or container) could and
drives the real conclude path; the job must end as the refusal says and show nothing
of what the link pointed at.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from jobs import services
from jobs.choices import JobStatus
from jobs.executors.base import JobSpec, Outcome
from jobs.models import Job
from tests.factories import make_job, make_team, result_doc
from tests.waits import PROMPT_S


def running(team, kind: str = "noop") -> tuple[Job, JobSpec]:
    job = make_job(team, kind=kind, status=JobStatus.RUNNING, worker="w@h")
    spec = JobSpec(job_id=job.pk, kind=kind, job_dir=services.job_dir(job.pk), timeout_s=60)
    spec.out_dir.mkdir(parents=True)
    return job, spec


def write_result(spec: JobSpec, doc: dict) -> None:
    (spec.out_dir / "result.json").write_text(json.dumps(doc))


def concluded(job: Job, spec: JobSpec) -> Job:
    services.conclude(job, spec, Outcome(exit_code=0))
    job.refresh_from_db()
    return job


def warnings_of(job: Job) -> str:
    return "\n".join(job.events.filter(level="warning").values_list("message", flat=True))


def test_a_result_json_linked_to_another_teams_result_ends_errored_showing_nothing_of_it(team):
    _other, other_spec = running(make_team("Beta"))
    write_result(other_spec, result_doc(summary={"secret": "beta's numbers"}))
    job, spec = running(team)
    (spec.out_dir / "result.json").symlink_to(other_spec.out_dir / "result.json")
    spec.out_dir.chmod(0o555)  # so the runner could not have replaced it
    job = concluded(job, spec)
    assert job.status == JobStatus.ERRORED
    assert "result.json is a symbolic link" in job.error
    assert "beta" not in json.dumps(job.summary) + job.error
    assert not job.measurements.exists() and not job.artifacts.exists()


def test_a_fifo_as_result_json_is_refused_at_once_without_blocking(team):
    job, spec = running(team)
    fifo = spec.out_dir / "result.json"
    os.mkfifo(fifo)

    blocked = threading.Event()
    done = threading.Event()

    def unblock() -> None:  # if the worker blocks on the FIFO, free it so the test ends
        while not done.wait(0.05):
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                continue  # nobody is reading it (yet)
            blocked.set()  # someone opened it to read and waits for a writer
            os.write(fd, json.dumps(result_doc()).encode())
            os.close(fd)
            return

    watcher = threading.Thread(target=unblock, daemon=True)
    watcher.start()
    job = concluded(job, spec)
    done.set()
    watcher.join()
    assert not blocked.is_set(), "the worker opened the FIFO and waited for a writer"
    assert job.status == JobStatus.ERRORED
    assert "result.json is not a regular file" in job.error


def test_a_result_json_linked_to_dev_zero_is_refused_without_reading(team):
    job, spec = running(team)
    (spec.out_dir / "result.json").symlink_to("/dev/zero")
    started = time.monotonic()
    job = concluded(job, spec)
    assert time.monotonic() - started < PROMPT_S  # reading /dev/zero never ends
    assert job.status == JobStatus.ERRORED and "symbolic link" in job.error


def test_a_hard_link_to_a_server_file_never_becomes_an_artifact(team, settings):
    secret = Path(settings.ARTIFACT_ROOT) / "server-secret-key"
    secret.write_text("the server's secret key")
    job, spec = running(team)
    write_result(spec, result_doc())
    os.link(secret, spec.out_dir / "key.txt")
    job = concluded(job, spec)
    assert job.status == JobStatus.SUCCEEDED
    assert not job.artifacts.filter(path="key.txt").exists()
    assert "key.txt" in warnings_of(job) and "hard link" in warnings_of(job)
    copies = services.artifact_dir(job.pk)
    assert not any(p.is_file() for p in copies.rglob("*")) if copies.exists() else True


def test_a_result_json_hard_linked_from_elsewhere_is_refused(team, settings):
    elsewhere = Path(settings.ARTIFACT_ROOT) / "someone-elses-result.json"
    elsewhere.write_text(json.dumps(result_doc(summary={"secret": "theirs"})))
    job, spec = running(team)
    os.link(elsewhere, spec.out_dir / "result.json")
    job = concluded(job, spec)
    assert job.status == JobStatus.ERRORED and "hard link" in job.error
    assert "theirs" not in json.dumps(job.summary)


def test_a_result_of_another_kind_is_refused(team):
    job, spec = running(team, kind="noop")
    write_result(spec, result_doc(kind="probe", summary={"gpu_count": 8}))
    job = concluded(job, spec)
    assert job.status == JobStatus.ERRORED
    assert "result.json is for kind 'probe', not this job's 'noop'" in job.error
    assert job.summary == {}


def test_a_summary_over_the_cap_is_refused_with_its_size(team, settings):
    settings.ROCPATH_SUMMARY_MAX_BYTES = 1024
    job, spec = running(team)
    write_result(spec, result_doc(summary={"padding": "x" * 5000}))
    job = concluded(job, spec)
    assert job.status == JobStatus.ERRORED
    assert "summary is 5015 bytes, over the cap of 1024" in job.error
    assert job.summary == {}


def test_a_result_json_over_the_cap_is_refused_before_it_is_read(team, settings):
    settings.ROCPATH_RESULT_MAX_BYTES = 4096
    job, spec = running(team)
    write_result(spec, result_doc(summary={"padding": "x" * 10_000}))
    job = concluded(job, spec)
    assert job.status == JobStatus.ERRORED
    assert "result.json is 10" in job.error and "over the cap of 4096 bytes" in job.error


def test_an_artifact_over_the_cap_is_refused_and_the_job_says_so(team, settings):
    settings.ROCPATH_ARTIFACT_MAX_BYTES = 1000
    job, spec = running(team)
    write_result(spec, result_doc())
    (spec.out_dir / "small.txt").write_bytes(b"s" * 100)
    (spec.out_dir / "huge.bin").write_bytes(b"h" * 5000)
    job = concluded(job, spec)
    assert job.status == JobStatus.SUCCEEDED
    assert [a.path for a in job.artifacts.all()] == ["small.txt"]
    assert "huge.bin" in warnings_of(job) and "over the cap of 1000 bytes" in warnings_of(job)


def test_artifacts_past_the_out_folders_total_cap_are_refused(team, settings):
    settings.ROCPATH_OUT_MAX_BYTES = 2500
    job, spec = running(team)
    write_result(spec, result_doc())
    for name in ("a.bin", "b.bin", "c.bin"):
        (spec.out_dir / name).write_bytes(b"z" * 1000)
    job = concluded(job, spec)
    assert [a.path for a in job.artifacts.all()] == ["a.bin", "b.bin"]
    assert "c.bin" in warnings_of(job)


def test_a_device_or_fifo_artifact_is_refused_without_being_opened(team):
    job, spec = running(team)
    write_result(spec, result_doc())
    os.mkfifo(spec.out_dir / "pipe")
    (spec.out_dir / "zero").symlink_to("/dev/zero")
    job = concluded(job, spec)
    assert job.status == JobStatus.SUCCEEDED and not job.artifacts.exists()
    assert "pipe" in warnings_of(job) and "zero" in warnings_of(job)


def test_artifacts_are_copies_that_a_later_swap_in_out_cannot_change(team, settings):
    secret = Path(settings.ARTIFACT_ROOT) / "server-file"
    secret.write_text("server only")
    job, spec = running(team)
    write_result(spec, result_doc())
    (spec.out_dir / "report.md").write_text("# the report")
    job = concluded(job, spec)
    artifact = job.artifacts.get()
    # Whatever a leftover process does to out/ afterwards, the download is the copy.
    if spec.out_dir.exists():
        (spec.out_dir / "report.md").unlink(missing_ok=True)
        (spec.out_dir / "report.md").symlink_to(secret)
    path = services.artifact_file(artifact)
    assert not path.is_relative_to(spec.out_dir)
    assert path.read_text() == "# the report"
    assert artifact.size == 12


@pytest.mark.parametrize("name", ["bad\nname.txt", "caf\udce9.txt"])
def test_artifact_names_with_control_characters_or_bad_utf8_are_refused(team, name):
    job, spec = running(team)
    write_result(spec, result_doc())
    with open(os.path.join(os.fsencode(spec.out_dir), os.fsencode(name)), "wb") as handle:
        handle.write(b"x")
    job = concluded(job, spec)
    assert job.status == JobStatus.SUCCEEDED and not job.artifacts.exists()
    assert "refused" in warnings_of(job)


@pytest.mark.parametrize("depth", [100_000, 900, 40])
def test_a_result_nested_too_deep_ends_the_job_errored_not_crashed(team, depth):
    # 100,000 deep: json.loads raised RecursionError; 900 deep: it parsed, was stored, and
    # every later read of the job's row raised RecursionError.
    job, spec = running(team)
    deep = "[" * depth + "]" * depth
    text = json.dumps(result_doc(summary={"a": "SENTINEL"})).replace('"SENTINEL"', deep)
    (spec.out_dir / "result.json").write_text(text)
    job = concluded(job, spec)
    assert job.status == JobStatus.ERRORED
    assert "result.json is invalid: nested too deeply (at most 32 levels)" in job.error
    assert Job.objects.get(pk=job.pk).summary == {}
