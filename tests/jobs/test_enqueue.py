"""A job is queued by name after its commit, with the task id recorded on its row."""

from __future__ import annotations

from config.celery import app
from jobs import services
from jobs.models import Job


def _submit(user, team) -> Job:
    return services.submit_job(user=user, kind="noop", params={}, team=team)


def test_the_run_is_sent_by_name_to_the_jobs_queue_after_commit(
    user, team, settings, monkeypatch, django_capture_on_commit_callbacks
):
    sent: list[tuple] = []
    monkeypatch.setattr(app, "send_task", lambda name, **options: sent.append((name, options)))
    with django_capture_on_commit_callbacks(execute=True):
        job = _submit(user, team)
        assert sent == []
    job.refresh_from_db()
    assert job.status == "queued"
    assert sent == [
        (
            "jobs.run_job",
            {"args": [job.pk], "task_id": job.task_id, "queue": settings.CELERY_TASK_DEFAULT_QUEUE},
        )
    ]


def test_an_unreachable_broker_keeps_the_job_pending_saying_so(
    user, team, monkeypatch, django_capture_on_commit_callbacks
):
    def refuse(*args, **kwargs):
        raise ConnectionError("broker down")

    monkeypatch.setattr(app, "send_task", refuse)
    with django_capture_on_commit_callbacks(execute=True):
        job = _submit(user, team)
    job.refresh_from_db()
    assert job.status == "pending" and job.error == "" and job.task_id == ""
    note = job.events.order_by("id").last().message
    assert note.startswith("pending: could not reach the job queue (ConnectionError: broker down)")
