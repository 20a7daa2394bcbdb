"""The control worker's part of ``/healthz``: how long ago a control-queue task last started.

The control worker (the dispatcher, the reaper, the schedules) is another process: it
stamps a row as each control-queue task starts (jobs.models.control_beat), and this reads
its age. Older than ROCPATH_CONTROL_STALE_S is "unavailable (the control worker has not run
for N s)": while it (or beat) is down pending jobs wait and a stuck job stays running, and
nothing else would say so. A web process younger than that threshold gives it the time to
start: `make run` starts the workers only once the web answers, and a database kept from an
earlier run holds that run's old beat, so "not run for a day" would be said of a worker
that is starting now. Until then the check says "starting", which counts as healthy.
"""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.utils import timezone

from jobs.models.control_beat import last_beat

# When this web process loaded the URLs (config.urls imports this module): the start of
# its grace for a control worker that has not beat yet.
STARTED_AT = timezone.now()


def control_worker(now: datetime | None = None) -> tuple[str, dict]:
    """The check ("ok", "starting (…)" or "unavailable (…)") and the beat: when a
    control-queue task last started and how many seconds ago (None before the first)."""
    now = now or timezone.now()
    stale_s = settings.ROCPATH_CONTROL_STALE_S
    beat = last_beat()
    age = None if beat is None else max(0, int((now - beat).total_seconds()))
    detail = {
        "last_beat": beat.isoformat() if beat else None,
        "age_s": age,
        "stale_after_s": stale_s,
    }
    if age is not None and age <= stale_s:
        return "ok", detail
    if (now - STARTED_AT).total_seconds() <= stale_s:
        return "starting (no control-queue task has run since this web process started)", detail
    if age is None:
        return f"unavailable (the control worker has not run in {stale_s} s: never)", detail
    return f"unavailable (the control worker has not run for {age} s)", detail
