"""A job's ending is announced to the layers above once, after it is committed."""

from __future__ import annotations

import pytest
from django.db import transaction

from jobs.choices import JobStatus
from jobs.finished import job_finished
from tests.factories import make_job, make_team

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def heard():
    got: list[tuple[int, str]] = []

    def listen(sender, *, job_id, status, **_):
        got.append((job_id, status))

    job_finished.connect(listen, dispatch_uid="test-heard")
    yield got
    job_finished.disconnect(dispatch_uid="test-heard")


def test_an_ended_job_is_announced_with_its_status(heard):
    job = make_job(make_team(), status=JobStatus.RUNNING)
    assert job.finish(JobStatus.SUCCEEDED)
    assert heard == [(job.pk, JobStatus.SUCCEEDED)]


def test_the_announcement_waits_for_the_commit(heard):
    job = make_job(make_team(), status=JobStatus.RUNNING)
    with transaction.atomic():
        job.finish(JobStatus.FAILED, error="tool said no")
        assert heard == []
    assert heard == [(job.pk, JobStatus.FAILED)]


def test_an_ending_that_rolled_back_is_never_announced(heard):
    job = make_job(make_team(), status=JobStatus.RUNNING)
    with pytest.raises(RuntimeError), transaction.atomic():
        job.finish(JobStatus.SUCCEEDED)
        raise RuntimeError("the rest of the conclude failed")
    assert heard == []


def test_moves_that_are_not_endings_are_not_announced(heard):
    job = make_job(make_team(), status=JobStatus.PENDING)
    assert job.mark_queued("task-1")
    assert heard == []


def test_a_failing_receiver_does_not_undo_the_ending(heard):
    def broken(sender, **_):
        raise ValueError("receiver bug")

    job_finished.connect(broken, dispatch_uid="test-broken")
    try:
        job = make_job(make_team(), status=JobStatus.RUNNING)
        assert job.cancel("by a test")
    finally:
        job_finished.disconnect(dispatch_uid="test-broken")
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELED
    assert heard == [(job.pk, JobStatus.CANCELED)]
