"""An ended job's charts are drawn where it ended, into the cache the web reads."""

from __future__ import annotations

import os
import uuid

from django.utils import timezone

from jobs.choices import JobStatus
from jobs.finished import job_finished
from jobs.models import Measurement
from stack.kinds.blas_bench import KIND
from tests.factories import make_job, make_measurement


def _ended_sweep(team):
    job = make_job(team, kind=KIND.name, status=JobStatus.SUCCEEDED, finished_at=timezone.now())
    for n in (1024, 2048):
        make_measurement(job, n / 10, m=n, n=n, k=n, backend="torch", precision="bf16")
    return job


def _drawn_before_the_first_view(member_client, job) -> bool:
    job_finished.send(sender="jobs.Job", job_id=job.pk, status=job.status)
    Measurement.objects.filter(job=job).delete()  # drawn again now, there would be nothing
    return "<svg" in member_client.get(f"/jobs/{job.pk}/").content.decode()


def test_with_a_shared_cache_the_worker_draws_the_charts_before_anyone_looks(
    member_client, team, settings, monkeypatch
):
    monkeypatch.setattr("portal.charts.CACHE_S", 60)  # what the test leaves in Redis goes
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:6379/13",
            # this suite's keys only: other suites share the server
            "KEY_PREFIX": f"{os.environ.get('ROCPATH_TEST_DB', 'test')}-{uuid.uuid4().hex}",
        }
    }
    assert _drawn_before_the_first_view(member_client, _ended_sweep(team))


def test_with_a_cache_of_its_own_the_worker_draws_nothing_the_web_would_not_see(
    member_client, team
):
    assert not _drawn_before_the_first_view(member_client, _ended_sweep(team))
