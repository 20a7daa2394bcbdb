"""An executor error says whether running the job again could help: a transient one (the
container engine does not answer) queues the job again after a pause, a bounded number
of times; a permanent one ends it errored at once."""

from __future__ import annotations

import pytest

from config.celery import app
from jobs import services
from jobs.choices import EventKind, JobStatus
from jobs.executors import ExecutorError
from jobs.services.run import MAX_ATTEMPTS, RETRY_DELAYS_S, retry_or_fail
from tests.factories import make_job

ENGINE_DOWN = "unix:///nonexistent/rocpath-test-docker.sock"


@pytest.fixture
def sent(monkeypatch) -> list[tuple[str, dict]]:
    """The tasks sent to the broker, instead of sending them."""
    calls: list[tuple[str, dict]] = []
    monkeypatch.setattr(app, "send_task", lambda name, **options: calls.append((name, options)))
    return calls


@pytest.fixture
def engine_down(settings, monkeypatch) -> None:
    """A worker on the docker executor whose engine does not answer: a real failed ping."""
    settings.ROCPATH_EXECUTOR = "docker"
    monkeypatch.setenv("DOCKER_HOST", ENGINE_DOWN)


def _run(job, capture) -> str:
    with capture(execute=True):
        return services.execute_job(job.pk, worker="w@h")


def test_a_job_whose_engine_does_not_answer_is_queued_again_after_a_pause(
    team, engine_down, sent, django_capture_on_commit_callbacks
):
    job = make_job(team, kind="noop", params={})
    job.mark_queued("task-1")
    assert _run(job, django_capture_on_commit_callbacks) == "queued again"
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED and job.attempt == 1
    assert job.task_id != "task-1"
    ((name, options),) = sent
    assert name == "jobs.run_job" and options["args"] == [job.pk]
    assert options["task_id"] == job.task_id and options["countdown"] == RETRY_DELAYS_S[0]
    status = job.events.filter(kind=EventKind.STATUS).last()
    assert status.message.startswith(f"queued: attempt 1 of {MAX_ATTEMPTS} could not run")
    assert "the Docker engine does not answer" in status.message
    assert status.message.endswith(f"again in {RETRY_DELAYS_S[0]} s")


def test_the_retries_are_bounded_and_the_last_error_ends_the_job(
    team, engine_down, sent, django_capture_on_commit_callbacks
):
    job = make_job(team, kind="noop", params={})
    job.mark_queued("task-1")
    outcomes = [_run(job, django_capture_on_commit_callbacks) for _ in range(MAX_ATTEMPTS)]
    assert outcomes == ["queued again"] * (MAX_ATTEMPTS - 1) + ["errored"]
    assert [options["countdown"] for _, options in sent] == list(RETRY_DELAYS_S)
    job.refresh_from_db()
    assert job.status == JobStatus.ERRORED and job.attempt == MAX_ATTEMPTS
    assert job.error.startswith("the Docker engine does not answer")


def test_a_job_canceled_while_it_ran_is_not_queued_again(
    team, engine_down, sent, django_capture_on_commit_callbacks
):
    job = make_job(team, kind="noop", params={})
    job.mark_queued("task-1")
    job.claim("w@h")
    job.request_cancel()
    error = ExecutorError("the engine went away", permanent=False)
    assert retry_or_fail(job, error) == "errored"
    job.refresh_from_db()
    assert job.status == JobStatus.ERRORED and sent == []


def test_a_permanent_executor_error_ends_the_job_at_once(
    team, settings, sent, django_capture_on_commit_callbacks
):
    settings.ROCPATH_EXECUTOR = "nonesuch"
    job = make_job(team, kind="noop", params={})
    job.mark_queued("task-1")
    assert _run(job, django_capture_on_commit_callbacks) == "errored"
    job.refresh_from_db()
    assert job.status == JobStatus.ERRORED and sent == []
    assert job.error.startswith("unknown executor 'nonesuch'")
