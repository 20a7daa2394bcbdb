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


def test_a_lost_pool_child_ends_only_its_own_running_job_and_only_once(team):
    mine = make_job(team, status=JobStatus.RUNNING, worker="w1@host", task_id="t1", attempt=1)
    other_task = make_job(team, status=JobStatus.RUNNING, worker="w1@host", task_id="t2")
    other_worker = make_job(team, status=JobStatus.RUNNING, worker="w2@host", task_id="t1")
    done = make_job(team, status=JobStatus.SUCCEEDED, worker="w1@host", task_id="t1")
    lost = {"task_id": "t1", "worker": "w1@host", "how": "signal 9 (SIGKILL)"}
    assert services.end_lost_run(mine.pk, **lost)
    assert not services.end_lost_run(mine.pk, **lost)  # already ended: once
    for job in (other_task, other_worker, done):
        assert not services.end_lost_run(job.pk, **lost)
    mine.refresh_from_db()
    assert mine.status == JobStatus.ERRORED and mine.attempt == 1
    assert "was killed (signal 9 (SIGKILL))" in mine.error, mine.error
    assert mine.events.filter(message__startswith=JobStatus.ERRORED).count() == 1
    for job, status in ((other_task, "running"), (other_worker, "running"), (done, "succeeded")):
        job.refresh_from_db()
        assert job.status == status
