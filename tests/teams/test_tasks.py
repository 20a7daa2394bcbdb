"""The source tasks run under their names, old and new, as a worker finds them."""

from __future__ import annotations

import pytest

from config.celery import app
from teams import sources
from teams.models import SourceSnapshot
from tests.factories import make_project


@pytest.fixture
def worker_registry() -> dict:
    app.loader.import_default_modules()  # what a worker does when it starts
    return app.tasks


def _lost_upload(team) -> SourceSnapshot:
    return SourceSnapshot.objects.create(
        project=make_project(team), origin=SourceSnapshot.Origin.UPLOAD, name="k.tar.gz"
    )


@pytest.mark.parametrize("name", ["teams.extract_source", "jobs.extract_source"])
def test_an_extraction_queued_under_either_name_runs(name, team, worker_registry):
    snapshot = _lost_upload(team)
    worker_registry[name](snapshot.pk)
    snapshot.refresh_from_db()
    assert snapshot.status == "failed"
    assert snapshot.error == "the uploaded archive is gone (was the worker restarted?)"


@pytest.mark.parametrize("name", ["teams.fetch_git_source", "jobs.fetch_git_source"])
def test_a_clone_queued_under_either_name_runs(name, team, settings, worker_registry):
    snapshot = SourceSnapshot.objects.create(
        project=make_project(team), origin=SourceSnapshot.Origin.GIT, name="file:///nowhere"
    )
    worker_registry[name](snapshot.pk)
    snapshot.refresh_from_db()
    assert snapshot.status == "failed" and "file:///nowhere" in snapshot.error


@pytest.mark.parametrize("name", ["teams.reap_source_staging", "jobs.reap_source_staging"])
def test_the_staging_reaper_runs_under_either_name(name, db, worker_registry):
    assert worker_registry[name]() == []


def test_the_names_the_services_queue_and_beat_runs_are_registered(settings, worker_registry):
    beat = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert {sources.EXTRACT_TASK, sources.CLONE_TASK, "jobs.run_job", *beat} <= set(worker_registry)


def test_an_unreachable_broker_keeps_the_source_pending_for_the_dispatcher(
    team, monkeypatch, django_capture_on_commit_callbacks
):
    def refuse(*args, **kwargs):
        raise ConnectionError("broker down")

    monkeypatch.setattr(app, "send_task", refuse)
    snapshot = _lost_upload(team)
    with django_capture_on_commit_callbacks(execute=True):
        sources._queue(sources.EXTRACT_TASK, snapshot.pk)
    snapshot.refresh_from_db()
    assert snapshot.status == "pending" and snapshot.awaiting_broker and snapshot.error == ""

    sent: list[tuple] = []
    monkeypatch.setattr(app, "send_task", lambda name, **options: sent.append((name, options)))
    with django_capture_on_commit_callbacks(execute=True):
        assert sources.send_unsent() == [snapshot.pk]
    snapshot.refresh_from_db()
    assert not snapshot.awaiting_broker
    assert [(name, options["args"]) for name, options in sent] == [
        (sources.EXTRACT_TASK, [snapshot.pk])
    ]
    assert sources.send_unsent() == []


def test_a_source_that_waited_for_the_broker_past_the_grace_fails_saying_so(team, settings):
    settings.ROCPATH_SOURCE_STAGING_GRACE_S = 0
    snapshot = _lost_upload(team)
    SourceSnapshot.objects.filter(pk=snapshot.pk).update(awaiting_broker=True)
    sources.reap_staging()
    snapshot.refresh_from_db()
    assert snapshot.status == "failed"
    assert snapshot.error == "the job queue could not be reached for 0 s"
