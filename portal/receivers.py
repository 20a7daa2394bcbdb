"""What the pages do when a job ends (jobs.finished.job_finished, sent after commit)."""

from __future__ import annotations

import logging

from django.conf import settings
from django.dispatch import receiver

from jobs.finished import job_finished
from jobs.models import Job
from portal.charts import job_charts
from portal.kinds import presenter_for
from portal.kinds.base import Presenter

logger = logging.getLogger(__name__)

# Caches one process keeps to itself: what the worker drew there no web process would see.
_PRIVATE = ("LocMemCache", "DummyCache")


def shared_cache() -> bool:
    """Whether the worker and the web share the cache (Redis, CACHE_URL)."""
    return not settings.CACHES["default"]["BACKEND"].endswith(_PRIVATE)


@receiver(job_finished, dispatch_uid="portal.job_finished")
def draw_charts(sender: object, *, job_id: int, status: str, **_: object) -> None:
    """Draw an ended job's charts into the shared cache, so its first view is served from it.

    A sweep's ten charts take pygal about half a second, once, here in the worker that
    concluded the job, rather than in the first viewer's request.
    """
    job = Job.objects.filter(pk=job_id).first()
    if job is None or not shared_cache():
        return
    presenter = presenter_for(job.kind)
    if type(presenter).charts is Presenter.charts:  # a kind that draws no charts
        return
    job_charts(job, presenter)
