from datetime import timedelta

from django.utils import timezone

from jobs import services
from jobs.choices import JobStatus
from tests.factories import make_job


def _ago(seconds: float):
    return timezone.now() - timedelta(seconds=seconds)


def test_a_running_job_without_a_recent_heartbeat_is_reaped_with_a_reason(team, settings):
    settings.ROCPATH_RUNNING_GRACE_S = 60
    stuck = make_job(team, status=JobStatus.RUNNING, worker="w@h", heartbeat_at=_ago(61))
    alive = make_job(team, status=JobStatus.RUNNING, worker="w@h", heartbeat_at=_ago(5))
    assert services.reap_stuck_jobs() == [stuck.pk]
    stuck.refresh_from_db()
    alive.refresh_from_db()
    assert stuck.status == JobStatus.ERRORED
    assert "no heartbeat from w@h" in stuck.error and "60 s" in stuck.error
    assert alive.status == JobStatus.RUNNING


def test_a_job_queued_past_the_grace_period_is_reaped_naming_its_queue(team, settings):
    settings.ROCPATH_QUEUED_GRACE_S = 600
    old = make_job(team, status=JobStatus.QUEUED, queued_at=_ago(601))
    fresh = make_job(team, status=JobStatus.QUEUED, queued_at=_ago(10))
    assert services.reap_stuck_jobs() == [old.pk]
    old.refresh_from_db()
    assert old.status == JobStatus.ERRORED
    assert f"queue {settings.CELERY_TASK_DEFAULT_QUEUE!r}" in old.error and "600 s" in old.error
    fresh.refresh_from_db()
    assert fresh.status == JobStatus.QUEUED


def test_a_pending_job_that_never_reached_the_queue_is_reaped(team, settings):
    settings.ROCPATH_QUEUED_GRACE_S = 600
    job = make_job(team, created_at=_ago(601))
    assert services.reap_stuck_jobs() == [job.pk]


def test_finished_jobs_are_never_touched_by_the_reaper(team, settings):
    settings.ROCPATH_RUNNING_GRACE_S = 1
    for status in (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELED):
        make_job(team, status=status, heartbeat_at=_ago(3600), queued_at=_ago(3600))
    assert services.reap_stuck_jobs() == []


def test_a_restarted_worker_ends_the_jobs_its_previous_life_left_running(team):
    mine = make_job(team, status=JobStatus.RUNNING, worker="w1@host")
    theirs = make_job(team, status=JobStatus.RUNNING, worker="w2@host")
    assert services.recover_worker_jobs("w1@host") == [mine.pk]
    mine.refresh_from_db()
    theirs.refresh_from_db()
    assert mine.status == JobStatus.ERRORED and "restarted" in mine.error
    assert theirs.status == JobStatus.RUNNING
