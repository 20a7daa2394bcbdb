import pytest

from jobs.choices import TERMINAL_STATUSES, TRANSITIONS, JobStatus
from jobs.models import IllegalTransition, Job
from tests.factories import make_job


def _attempt(job: Job, to: str) -> bool:
    if to == JobStatus.QUEUED:
        return job.mark_queued("task-1")
    if to == JobStatus.RUNNING:
        return job.claim("worker@test")
    if to == JobStatus.CANCELED:
        return job.cancel("test")
    if to == JobStatus.PENDING:
        return job._move(JobStatus.PENDING)
    return job.finish(to, error="x" if to != JobStatus.SUCCEEDED else "")


ALL_MOVES = [(a, b) for a in JobStatus.values for b in JobStatus.values]


@pytest.mark.parametrize(("start", "to"), ALL_MOVES)
def test_every_move_is_allowed_or_refused_as_the_table_says(team, start, to):
    job = make_job(team, status=start)
    if to in TRANSITIONS[start]:
        assert _attempt(job, to) is True
        job.refresh_from_db()
        assert job.status == to
    else:
        with pytest.raises(IllegalTransition):
            _attempt(job, to)
        job.refresh_from_db()
        assert job.status == start


def test_terminal_statuses_allow_no_move_at_all():
    for status in TERMINAL_STATUSES:
        assert TRANSITIONS[status] == frozenset()


def test_a_move_seen_from_a_stale_copy_changes_nothing(team):
    job = make_job(team, status=JobStatus.QUEUED)
    stale = Job.objects.get(pk=job.pk)
    assert job.claim("worker-a@host") is True
    # The stale copy still believes the job is queued: its claim must not win.
    assert stale.claim("worker-b@host") is False
    job.refresh_from_db()
    assert job.worker == "worker-a@host"
    assert job.attempt == 1


def test_claim_counts_attempts_and_records_the_worker(team):
    job = make_job(team, status=JobStatus.QUEUED)
    assert job.claim("w@h")
    assert (job.status, job.worker, job.attempt) == (JobStatus.RUNNING, "w@h", 1)
    assert job.started_at is not None and job.heartbeat_at is not None


def test_every_move_leaves_a_status_event(team):
    job = make_job(team)
    job.mark_queued("t")
    job.claim("w@h")
    job.finish(JobStatus.SUCCEEDED, exit_code=0)
    statuses = list(job.events.filter(kind="status").values_list("data__status", flat=True))
    assert statuses == ["queued", "running", "succeeded"]


def test_finish_refuses_a_status_that_is_not_terminal(team):
    job = make_job(team, status=JobStatus.RUNNING)
    with pytest.raises(IllegalTransition):
        job.finish(JobStatus.QUEUED)


def test_request_cancel_is_only_for_running_jobs(team):
    job = make_job(team, status=JobStatus.QUEUED)
    with pytest.raises(IllegalTransition):
        job.request_cancel()
    running = make_job(team, status=JobStatus.RUNNING)
    assert running.request_cancel() is True
    assert running.request_cancel() is False  # asked once is enough
