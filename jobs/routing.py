"""Which Celery queue a job goes to, and which queues a team may name.

A queue is a promise about the workers that listen on it: an operator may give one worker
GPUs, another ``ROCPATH_LOCAL_UNSANDBOXED=1`` for code it trusts. So ``hardware.queue`` is
not the team's to choose freely: a team may name the default queue (``ROCPATH_QUEUE``) and
the queues ``ROCPATH_JOB_QUEUES`` opens to every team or to it, nothing else.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

# ROCPATH_JOB_QUEUES's key for the queues open to every team (no team slug is "*").
EVERY_TEAM = "*"


def allowed_queues(team: Any) -> list[str]:
    """The queues this team may name in ``hardware.queue``: the default first."""
    extra = settings.ROCPATH_JOB_QUEUES
    names = [settings.CELERY_TASK_DEFAULT_QUEUE]
    for queue in [*extra.get(EVERY_TEAM, []), *extra.get(team.slug, [])]:
        if queue not in names:
            names.append(queue)
    return names


def queue_errors(hardware: object, team: Any) -> list[str]:
    """``queue: ...`` when the job names a queue its team may not, else nothing.

    Only a well-formed queue name is judged here; validate_hardware reports the rest.
    """
    if not isinstance(hardware, dict) or not isinstance(hardware.get("queue"), str):
        return []
    queue = hardware["queue"]
    allowed = allowed_queues(team)
    if queue in allowed:
        return []
    return [
        f"queue: {queue[:64]!r} is not a queue this team may use; allowed: "
        f"{', '.join(allowed)} (ROCPATH_QUEUE and ROCPATH_JOB_QUEUES)"
    ]
