"""Celery worker hooks: recovery at start-up, database connection hygiene per task."""

from __future__ import annotations

import logging

from celery.signals import task_prerun, worker_ready
from django.db import close_old_connections

logger = logging.getLogger(__name__)


@worker_ready.connect
def _recover_jobs(sender=None, **_: object) -> None:
    from jobs.services import recover_worker_jobs

    name = getattr(sender, "hostname", None)
    if not name:
        return
    ended = recover_worker_jobs(name)
    if ended:
        logger.warning("worker %s ended jobs left running by its previous life: %s", name, ended)


@task_prerun.connect
def _fresh_connections(**_: object) -> None:
    """What Django does per request: drop connections that are broken or past CONN_MAX_AGE."""
    close_old_connections()
