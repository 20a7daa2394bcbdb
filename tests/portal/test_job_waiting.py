"""The job page says where a waiting job waits and why, and the note follows the job: the
log poll that refreshes the status refreshes it too, and drops it once the job runs."""

from __future__ import annotations

from jobs.choices import JobStatus
from tests.factories import make_job, make_worker


def test_a_queued_job_with_no_consumer_says_its_queue_why_and_what_happens(member_client, team):
    make_worker("celery@cpu-only", queues=["rocpath"])
    job = make_job(
        team, status=JobStatus.QUEUED, queue="gpu-gfx942", route_note="asks for arch gfx942"
    )
    html = member_client.get(f"/jobs/{job.pk}/").content.decode()
    assert 'id="job-waiting"' in html
    assert "Waiting on queue <code>gpu-gfx942</code>" in html
    assert "Why here: asks for arch gfx942" in html
    assert "no live worker consumes this queue now" in html
    assert "ROCPATH_QUEUED_GRACE_S" in html


def test_a_queued_job_behind_busy_workers_names_them(member_client, team):
    make_worker("celery@mi300x-1", queues=["gpu-gfx942"], jobs_running=1)
    make_worker("celery@mi300x-2", queues=["gpu-gfx942"], jobs_running=0)
    job = make_job(team, status=JobStatus.QUEUED, queue="gpu-gfx942", route_note="busy fleet")
    html = member_client.get(f"/jobs/{job.pk}/").content.decode()
    assert 'data-live="2" data-busy="1"' in html
    assert "celery@mi300x-1 (busy), celery@mi300x-2" in html
    assert "2 live workers consume it, 1 busy" in html


def test_the_log_poll_refreshes_the_note_and_drops_it_once_the_job_runs(member_client, team):
    job = make_job(team, status=JobStatus.QUEUED, queue="gpu-gfx942")
    poll = member_client.get(f"/jobs/{job.pk}/log/?after=0").content.decode()
    assert '<div id="job-waiting" hx-swap-oob="true">' in poll
    assert "no live worker consumes this queue now" in poll
    make_worker("celery@arrived", queues=["gpu-gfx942"])  # a consumer turns up
    poll = member_client.get(f"/jobs/{job.pk}/log/?after=0").content.decode()
    assert "1 live worker consumes it, 0 busy" in poll
    job.status = JobStatus.RUNNING
    job.save(update_fields=["status"])
    poll = member_client.get(f"/jobs/{job.pk}/log/?after=0").content.decode()
    assert '<div id="job-waiting" hx-swap-oob="true"></div>' in poll  # the note is gone


def test_a_finished_job_page_has_no_waiting_note(member_client, team):
    job = make_job(team, status=JobStatus.SUCCEEDED)
    html = member_client.get(f"/jobs/{job.pk}/").content.decode()
    assert "Waiting on queue" not in html
