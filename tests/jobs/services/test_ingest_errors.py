"""Whatever goes wrong while a job's result is stored, the job ends errored with that cause.

Before, an exception out of the conclude step (a value PostgreSQL refuses, a MemoryError)
left the job "running"; the reaper later blamed "worker lost: no heartbeat". These run on
the real PostgreSQL, outside a test transaction (transactional_db), so a failed conclude
really rolls back and the job's ending is written by a transaction of its own.
"""

from __future__ import annotations

import json

import pytest

from jobs import services
from jobs.choices import JobStatus
from jobs.executors.base import JobSpec, Outcome
from jobs.models import Job, Measurement
from jobs.services.paths import artifact_dir
from tests import factories
from tests.factories import make_job

pytestmark = pytest.mark.django_db(transaction=True)


NOOP_MEASUREMENT = {
    "benchmark": "noop",
    "case": {},
    "metric": "sleep_s",
    "unit": "s",
    "value": 1.0,
    "samples": [],
    "better": "lower",
}


def result_doc(**fields) -> dict:
    return factories.result_doc(**{"measurements": [dict(NOOP_MEASUREMENT)], **fields})


def running(team) -> tuple[Job, JobSpec]:
    job = make_job(team, kind="noop", status=JobStatus.RUNNING, worker="w@h")
    spec = JobSpec(job_id=job.pk, kind="noop", job_dir=services.job_dir(job.pk), timeout_s=60)
    spec.out_dir.mkdir(parents=True)
    (spec.out_dir / "kept.txt").write_text("an artifact")
    return job, spec


def concluded(job: Job, spec: JobSpec) -> tuple[str, Job]:
    verdict = services.conclude(job, spec, Outcome(exit_code=0))
    return verdict, Job.objects.get(pk=job.pk)


def assert_nothing_half_stored(job: Job) -> None:
    assert not Measurement.objects.filter(job=job).exists()
    assert not job.artifacts.exists()
    assert not artifact_dir(job.pk).exists()  # no copy that no row references


def test_a_benchmark_name_over_its_column_ends_the_job_errored_saying_so(team):
    job, spec = running(team)
    doc = result_doc()
    doc["measurements"][0]["benchmark"] = "b" * 200  # the column holds 128
    (spec.out_dir / "result.json").write_text(json.dumps(doc))
    verdict, job = concluded(job, spec)
    assert job.error.startswith("could not store the result: DataError:"), job.error
    assert verdict == "errored: could not store the result"
    assert job.status == JobStatus.ERRORED and job.finished_at is not None
    assert "too long" in job.error
    assert_nothing_half_stored(job)


def test_a_result_json_that_is_a_folder_ends_the_job_errored_saying_so(team):
    job, spec = running(team)
    (spec.out_dir / "result.json").mkdir()
    _, job = concluded(job, spec)
    assert job.status == JobStatus.ERRORED
    assert "result.json is not a regular file (a folder)" in job.error


def test_a_memory_error_while_reading_the_result_ends_the_job_errored(team, monkeypatch):
    job, spec = running(team)
    (spec.out_dir / "result.json").write_text(json.dumps(result_doc()))

    def exhausted(*_: object, **__: object) -> bytes:
        raise MemoryError

    monkeypatch.setattr("jobs.services.ingest.read_result", exhausted)
    _, job = concluded(job, spec)
    assert job.status == JobStatus.ERRORED
    assert job.error.startswith("could not store the result: MemoryError")
    assert_nothing_half_stored(job)


@pytest.mark.parametrize("error", [MemoryError, RecursionError])
def test_an_error_while_storing_the_result_rolls_it_back_and_ends_errored(team, monkeypatch, error):
    job, spec = running(team)
    (spec.out_dir / "result.json").write_text(json.dumps(result_doc(summary={"s": 1})))

    def fails(*_: object, **__: object) -> None:
        raise error("maximum depth exceeded")

    # after the status move and the measurements, inside the conclude transaction
    monkeypatch.setattr("jobs.services.ingest._register_artifacts", fails)
    verdict, job = concluded(job, spec)
    assert verdict == "errored: could not store the result"
    assert job.status == JobStatus.ERRORED
    assert job.error == f"could not store the result: {error.__name__}: maximum depth exceeded"
    assert job.summary == {}  # written by the transaction that failed
    assert_nothing_half_stored(job)
    assert job.events.filter(level="error", message__startswith="could not store").exists()


def test_a_result_nested_100000_deep_ends_the_job_errored(team):
    job, spec = running(team)
    deep = "[" * 100_000 + "]" * 100_000
    text = json.dumps(result_doc(summary={"a": "DEEP"})).replace('"DEEP"', deep)
    (spec.out_dir / "result.json").write_text(text)
    _, job = concluded(job, spec)
    assert job.status == JobStatus.ERRORED
    assert "nested too deeply" in job.error


def test_a_job_the_store_failed_for_is_never_reaped_as_a_lost_worker(team, monkeypatch):
    job, spec = running(team)
    doc = result_doc()
    doc["measurements"][0]["unit"] = "u" * 100  # the column holds 32
    (spec.out_dir / "result.json").write_text(json.dumps(doc))
    concluded(job, spec)
    Job.objects.filter(pk=job.pk).update(heartbeat_at="2000-01-01T00:00:00Z")
    assert job.pk not in services.reap_stuck_jobs()
    assert "worker lost" not in Job.objects.get(pk=job.pk).error
