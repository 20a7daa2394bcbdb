"""Celery tasks of source intake: thin wrappers that load the row and call teams.sources.

Queued by name (``config.celery.queue_task``), never imported by the services. Until
this app was split from jobs they were named ``jobs.*``; each is registered under that
name too (``was``), so messages queued before an upgrade and an old beat schedule still
run the same body.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from celery import shared_task
from django.conf import settings

from teams.models import SourceSnapshot
from teams.sources import clone, extract_upload, reap_staging


def task(name: str, *, was: str, **options: Any) -> Callable[[Callable], Any]:
    """``shared_task(name=…)``, with the body also registered under its old name."""

    def register(body: Callable) -> Any:
        shared_task(name=was, **options)(body)
        return shared_task(name=name, **options)(body)

    return register


@task(
    "teams.fetch_git_source",
    was="jobs.fetch_git_source",
    ignore_result=True,
    time_limit=settings.ROCPATH_GIT_TIMEOUT_S + 600,  # the clone stops itself before
)
def fetch_git_source(snapshot_id: int) -> None:
    """Clone a project's git source on a worker (the web process never waits on a clone)."""
    snapshot = SourceSnapshot.objects.filter(pk=snapshot_id).first()
    if snapshot is not None and snapshot.status == SourceSnapshot.Status.PENDING:
        clone(snapshot)


@task("teams.extract_source", was="jobs.extract_source", ignore_result=True, time_limit=3600)
def extract_source(snapshot_id: int) -> None:
    """Extract an uploaded archive on a worker (the web request only checked its members)."""
    extract_upload(snapshot_id)


@task("teams.reap_source_staging", was="jobs.reap_source_staging", ignore_result=True)
def reap_source_staging() -> list[str]:
    """Remove the staging a killed web process or worker left behind."""
    return reap_staging()
