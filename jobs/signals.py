"""Worker start-up hook: a worker that starts ends what its previous life left running."""

from __future__ import annotations

import logging

from celery.signals import worker_ready

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
