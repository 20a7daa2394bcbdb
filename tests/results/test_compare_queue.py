"""results.compare_job runs on a queue of its own (ROCPATH_COMPARE_QUEUE): forty comparisons
after a sweep held a scheduled job 2.5 minutes on the job queue (issue 39, item 3)."""

from __future__ import annotations

from typing import Any

import pytest

from config.celery import app
from jobs.choices import JobStatus
from results import services
from tests.factories import make_project
from tests.results.helpers import environment, sampled_job

pytestmark = pytest.mark.django_db


def test_the_compare_queue_is_its_own_by_default(settings: Any) -> None:
    queue = settings.ROCPATH_COMPARE_QUEUE
    assert queue == f"{settings.CELERY_TASK_DEFAULT_QUEUE}-compare"
    others = {
        settings.CELERY_TASK_DEFAULT_QUEUE,
        settings.ROCPATH_CONTROL_QUEUE,
        settings.ROCPATH_ALERT_QUEUE,
    }
    assert queue not in others
    # A task sent without a queue (apply_async, a shell) is routed there too.
    assert app.amqp.router.route({}, "results.compare_job")["queue"].name == queue


def test_a_finished_job_in_a_baselines_scope_is_compared_on_the_compare_queue(
    team: Any,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    sent: list[tuple[str, list, str]] = []
    monkeypatch.setattr(
        app, "send_task", lambda name, args, queue, **_: sent.append((name, args, queue))
    )
    project, env = make_project(team), environment("box-1")
    services.pin_baseline(sampled_job(team, project, env, seed=1))
    job = sampled_job(team, project, env, status=JobStatus.RUNNING)
    with django_capture_on_commit_callbacks(execute=True):
        job.finish(JobStatus.SUCCEEDED)
    assert ("results.compare_job", [job.pk], settings.ROCPATH_COMPARE_QUEUE) in sent
    assert all(
        queue != settings.CELERY_TASK_DEFAULT_QUEUE
        for name, _, queue in sent
        if name == "results.compare_job"
    )
