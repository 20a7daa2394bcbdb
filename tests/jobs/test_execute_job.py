"""execute_job and conclude, run in-process against the real runner (no Celery)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from jobs import services
from jobs.choices import JobStatus
from jobs.executors.base import JobSpec, Outcome
from jobs.models import Environment, Job, Measurement
from stack import cgroup
from tests.factories import make_job, result_doc


def _queued(team, kind="noop", params=None, **fields) -> Job:
    job = make_job(team, kind=kind, params=params or {}, **fields)
    job.mark_queued("task-x")
    return job


@pytest.mark.process
def test_a_noop_job_runs_to_succeeded_with_its_measurement_and_events(team):
    job = _queued(team, params={"steps": 4, "seconds": 0.2, "write_bytes": 10})
    assert services.execute_job(job.pk, worker="w@h") == JobStatus.SUCCEEDED
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED and job.exit_code == 0 and job.progress == 100
    assert Measurement.objects.get(job=job).metric == "sleep_s"
    assert job.events.filter(kind="progress").count() == 4
    assert [a.path for a in job.artifacts.all()] == ["noop.bin"]
    assert job.artifacts.get().size == 10


@pytest.mark.process
def test_a_runner_that_reports_failure_ends_failed_not_errored(team):
    job = _queued(team, params={"exit_status": "failed"})
    services.execute_job(job.pk, worker="w@h")
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and job.exit_code == 1


@pytest.mark.process
def test_a_runner_that_could_not_run_its_tool_ends_errored(team):
    job = _queued(team, params={"exit_status": "errored"})
    services.execute_job(job.pk, worker="w@h")
    job.refresh_from_db()
    assert job.status == JobStatus.ERRORED and job.exit_code == 3


@pytest.mark.process
def test_a_local_job_over_its_memory_ends_errored_out_of_memory_naming_its_limit(team):
    try:
        cgroup.find_hierarchy("probe-tests")
    except cgroup.CgroupError as exc:
        pytest.skip(f"no memory cgroup here: {exc}")
    params = {"action": "allocate-memory", "megabytes": 512, "processes": 2}
    job = _queued(team, kind="sandbox-check", params=params, requested_hardware={"memory_mb": 256})
    assert services.execute_job(job.pk, worker="w@h") == "errored: out of memory"
    job.refresh_from_db()
    assert job.status == JobStatus.ERRORED and job.error.startswith(
        "out of memory: the job went over its 256 MiB memory limit and the kernel killed it"
    )


@pytest.mark.process
def test_a_probe_job_stores_the_hosts_inventory_as_an_environment(team):
    job = _queued(team, kind="probe")
    assert services.execute_job(job.pk, worker="w@h") == JobStatus.SUCCEEDED
    job.refresh_from_db()
    env = job.environment
    assert env is not None and env.data["host"]["cpu_cores"] >= 1
    assert isinstance(env.data["tools"]["rocminfo"]["present"], bool)  # answered either way
    # Probing the same host again lands on the same environment row.
    again = _queued(team, kind="probe")
    services.execute_job(again.pk, worker="w@h")
    again.refresh_from_db()
    assert again.environment_id == env.pk and Environment.objects.count() == 1


@pytest.mark.process
def test_a_job_claimed_already_is_never_run_twice(team):
    job = _queued(team)
    assert services.execute_job(job.pk, worker="w@h") == JobStatus.SUCCEEDED
    assert services.execute_job(job.pk, worker="other@h") == "skipped: succeeded"
    job.refresh_from_db()
    assert job.attempt == 1 and job.worker == "w@h"


@pytest.mark.process
def test_a_message_the_dispatcher_replaced_never_claims_the_job_and_its_successor_runs_it(team):
    """Sent again under task-y (the first message was thought lost), the job must not be
    claimed by task-x turning up late: a database retry of task-x would then find the row
    naming task-y, take the run for another's and leave the job running with nobody."""
    job = _queued(team)
    Job.objects.filter(pk=job.pk).update(task_id="task-y")  # what dispatch.resend writes
    outcome = services.execute_job(job.pk, worker="w@h", task_id="task-x")
    assert outcome == "skipped: claimed elsewhere, or sent again under another task id"
    assert Job.objects.get(pk=job.pk).status == JobStatus.QUEUED
    assert services.execute_job(job.pk, worker="w@h", task_id="task-y") == JobStatus.SUCCEEDED
    assert Job.objects.get(pk=job.pk).attempt == 1


def test_a_redelivered_job_with_a_live_heartbeat_is_left_alone(team):
    job = make_job(team, status=JobStatus.RUNNING, worker="a@h", heartbeat_at=timezone.now())
    assert services.execute_job(job.pk, worker="b@h") == "skipped: running elsewhere"
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING


def test_a_redelivered_job_whose_worker_went_silent_ends_errored(team, settings):
    stale = timezone.now() - timedelta(seconds=settings.ROCPATH_RUNNING_GRACE_S + 5)
    job = make_job(team, status=JobStatus.RUNNING, worker="a@h", heartbeat_at=stale)
    assert services.execute_job(job.pk, worker="b@h") == "errored: worker lost"
    job.refresh_from_db()
    assert job.status == JobStatus.ERRORED and "worker lost" in job.error


def test_a_job_canceled_before_it_ran_is_skipped(team):
    job = _queued(team)
    job.cancel("changed my mind")
    assert services.execute_job(job.pk, worker="w@h") == "skipped: canceled"


def _spec(job: Job) -> JobSpec:
    spec = JobSpec(
        job_id=job.pk, kind=job.kind, job_dir=services.job_dir(job.pk), timeout_s=job.timeout_s
    )
    spec.out_dir.mkdir(parents=True, exist_ok=True)
    return spec


def _running(team) -> Job:
    return make_job(team, status=JobStatus.RUNNING, worker="w@h", timeout_s=7)


def test_no_result_json_is_errored_with_the_stderr_tail(team):
    job = _running(team)
    services.conclude(job, _spec(job), Outcome(exit_code=1, stderr_tail=["Traceback: boom"]))
    job.refresh_from_db()
    assert job.status == JobStatus.ERRORED and "without writing result.json" in job.error
    assert "boom" in job.error


def test_an_invalid_result_json_is_errored_and_says_why(team):
    job = _running(team)
    spec = _spec(job)
    (spec.out_dir / "result.json").write_text(json.dumps({"schema_version": 1, "kind": "noop"}))
    services.conclude(job, spec, Outcome(exit_code=0))
    job.refresh_from_db()
    assert job.status == JobStatus.ERRORED and "result.json is invalid" in job.error


@pytest.mark.parametrize(
    ("outcome", "status", "words"),
    [
        (Outcome(timed_out=True), JobStatus.ERRORED, "timed out after 7 s"),
        (Outcome(signal=9), JobStatus.ERRORED, "SIGKILL"),
        (Outcome(canceled=True), JobStatus.CANCELED, "canceled"),
    ],
)
def test_how_the_process_ended_decides_the_status(team, outcome, status, words):
    job = _running(team)
    services.conclude(job, _spec(job), outcome)
    job.refresh_from_db()
    assert job.status == status and words in job.error


def test_a_job_the_reaper_ended_mid_run_keeps_that_ending(team):
    job = _running(team)
    spec = _spec(job)
    measurement = {
        "benchmark": "b",
        "case": {},
        "metric": "m",
        "unit": "s",
        "value": 1,
        "samples": [1],
        "better": "lower",
    }
    (spec.out_dir / "result.json").write_text(json.dumps(result_doc(measurements=[measurement])))
    Job.objects.get(pk=job.pk).fail_to_run("reaped")
    assert services.conclude(job, spec, Outcome(exit_code=0)).startswith("ended elsewhere")
    job.refresh_from_db()
    assert job.status == JobStatus.ERRORED and not Measurement.objects.filter(job=job).exists()


def test_no_result_json_because_the_out_folder_filled_leads_with_the_runners_reason(team):
    job = _running(team)
    said = (
        "No space left on device: the out folder /j/out is full; its largest file is "
        "out/big.bin (16777216 bytes), so result.json could not be written"
    )
    services.conclude(job, _spec(job), Outcome(exit_code=3, stderr_tail=[f"stack: {said}"]))
    job.refresh_from_db()
    assert job.status == JobStatus.ERRORED
    assert job.error.startswith(f"{said} (runner exited with code 3 without writing"), job.error
