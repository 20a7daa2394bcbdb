"""The Celery application, and the one way to queue a task on it.

Configuration comes from Django settings (CELERY_*). Tasks are queued by name through
``queue_task``, so no service imports a tasks module (which imports the services): the
layers stay a line, not a loop.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")

logger = logging.getLogger(__name__)

app = Celery("rocpath")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


def queue_task(
    name: str,
    *args: Any,
    task_id: str | None = None,
    queue: str | None = None,
    on_error: Callable[[Exception], None] | None = None,
    countdown: float | None = None,
) -> None:
    """Send the task ``name`` once the current transaction commits (at once outside one).

    After commit, so that the worker finds the rows the caller wrote. When the broker
    cannot be reached the error is logged and handed to ``on_error`` (to mark the row
    that waited on the task failed, saying so), never raised into a commit hook.
    ``countdown``: run it no sooner than that many seconds from now.
    """
    from django.conf import settings
    from django.db import transaction

    def send() -> None:
        try:
            app.send_task(
                name,
                args=list(args),
                task_id=task_id,
                queue=queue or settings.CELERY_TASK_DEFAULT_QUEUE,
                **({"countdown": countdown} if countdown else {}),
            )
        except Exception as exc:  # the broker is down or misconfigured
            logger.exception("could not queue %s%s", name, tuple(args))
            if on_error is not None:
                on_error(exc)

    transaction.on_commit(send)
