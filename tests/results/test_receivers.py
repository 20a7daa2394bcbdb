"""A job that ends in a baseline's scope is compared after its commit, and only then."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from django.db import transaction

from jobs.choices import JobStatus
from results import services
from results.models import Verdict
from tests.factories import make_project
from tests.results.helpers import environment, sampled_job
from tests.workers import Worker, wait_until, worker_env

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def queued(monkeypatch):
    """The compare tasks the receiver sends, recorded at the moment of sending."""
    sent: list[tuple[str, tuple]] = []

    def record(name, *args, **_):
        sent.append((name, args))

    monkeypatch.setattr("results.receivers.queue_task", record)
    return sent


@pytest.fixture
def scope(team):
    project, env = make_project(team), environment("box-1")
    services.pin_baseline(sampled_job(team, project, env, seed=1))
    return project, env


def test_a_job_ending_in_scope_is_queued_for_comparison_after_the_commit(team, scope, queued):
    job = sampled_job(team, *scope, status=JobStatus.RUNNING)
    with transaction.atomic():
        job.finish(JobStatus.SUCCEEDED)
        assert queued == []
    assert queued == [("results.compare_job", (job.pk,))]


def test_an_ending_that_rolled_back_queues_nothing(team, scope, queued):
    job = sampled_job(team, *scope, status=JobStatus.RUNNING)
    with pytest.raises(RuntimeError), transaction.atomic():
        job.finish(JobStatus.SUCCEEDED)
        raise RuntimeError("the rest of the conclude failed")
    assert queued == []


def test_jobs_out_of_scope_or_not_succeeded_queue_nothing(team, scope, queued):
    project, env = scope
    for job, status in (
        (sampled_job(team, project, environment("box-2"), status=JobStatus.RUNNING), "succeeded"),
        (sampled_job(team, make_project(team), env, status=JobStatus.RUNNING), "succeeded"),
        (sampled_job(team, project, env, status=JobStatus.RUNNING), "failed"),
    ):
        job.finish(status)
    assert queued == []


@pytest.fixture
def compare_worker(transactional_db, settings, tmp_path) -> Iterator[Worker]:
    """A comparison worker as make run starts one: the compare queue alone, one at a time."""
    queue = f"it-{uuid.uuid4().hex[:8]}-compare"
    settings.ROCPATH_COMPARE_QUEUE = queue
    handle = Worker(
        env=worker_env(settings, ROCPATH_COMPARE_QUEUE=queue),
        name=f"{queue}@%h",
        queue=queue,
        log=tmp_path / "compare.log",
        concurrency=1,
    )
    handle.log.touch()
    handle.start()
    yield handle
    handle.stop()


@pytest.mark.integration
def test_a_real_worker_writes_the_verdicts_of_a_job_that_ended_in_scope(
    team, scope, compare_worker
):
    slow = sampled_job(team, *scope, level=85.0, seed=2, status=JobStatus.RUNNING)
    slow.finish(JobStatus.SUCCEEDED)
    assert wait_until(lambda: Verdict.objects.filter(job=slow).count() == 2, timeout=60)
    assert set(Verdict.objects.filter(job=slow).values_list("verdict", flat=True)) == {"regressed"}
