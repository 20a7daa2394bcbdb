"""jobs.fleet_view.waiting_for: where a pending or queued job waits, why, and whether any
live worker consumes that queue now (the job page and the job API both read it)."""

from __future__ import annotations

from django.utils import timezone

from jobs.choices import JobStatus
from jobs.fleet_view import gpu_groups, waiting_for
from tests.factories import make_job, make_worker


def test_a_running_or_ended_job_is_not_waiting(team):
    assert waiting_for(make_job(team, status=JobStatus.RUNNING)) is None
    assert waiting_for(make_job(team, status=JobStatus.SUCCEEDED)) is None


def test_a_queued_job_on_a_queue_nobody_consumes_says_it_waits_for_one_or_the_reaper(
    team, settings
):
    settings.ROCPATH_QUEUED_GRACE_S = 3600
    make_worker("celery@elsewhere", queues=["rocpath"])
    make_worker("celery@gone-mi300x", queues=["gpu-gfx942"], seen_s_ago=3600)
    make_worker("celery@stopped-mi300x", queues=["gpu-gfx942"], stopped_at=timezone.now())
    job = make_job(
        team, status=JobStatus.QUEUED, queue="gpu-gfx942", route_note="asks for arch gfx942"
    )
    waiting = waiting_for(job)
    assert waiting.queue == "gpu-gfx942" and not waiting.is_default
    assert waiting.route_note == "asks for arch gfx942"
    assert waiting.live_workers == [] and waiting.busy_workers == []
    assert waiting.note == (
        "no live worker consumes this queue now: it will wait until one does or the reaper "
        "ends it after ROCPATH_QUEUED_GRACE_S (3600 s)."
    )


def test_a_queued_job_behind_busy_consumers_says_it_runs_when_one_finishes(team):
    make_worker("celery@a", queues=["rocpath", "gpu-gfx942"], jobs_running=1)
    make_worker("celery@b", queues=["gpu-gfx942"], jobs_running=2)
    job = make_job(team, status=JobStatus.QUEUED, queue="gpu-gfx942")
    waiting = waiting_for(job)
    assert waiting.live_workers == ["celery@a", "celery@b"]
    assert waiting.busy_workers == ["celery@a", "celery@b"]
    assert (
        waiting.note
        == "2 live workers consume it, all busy: it runs when one of them finishes its job."
    )


def test_an_idle_consumer_is_counted_as_free(team):
    make_worker("celery@busy", jobs_running=1)
    make_worker("celery@idle", jobs_running=0)
    waiting = waiting_for(make_job(team, status=JobStatus.QUEUED))
    assert waiting.queue == "rocpath" and waiting.is_default  # not routed: the default
    assert waiting.busy_workers == ["celery@busy"] and waiting.idle_workers == 1
    assert "1 busy: a free one should take it shortly" in waiting.note


def test_a_pending_job_says_it_has_not_reached_the_queue_yet(team):
    waiting = waiting_for(make_job(team, status=JobStatus.PENDING))
    assert waiting.note.startswith("Not yet handed to the queue")


def test_a_queue_named_by_hand_before_routing_is_the_one_waited_on(team):
    job = make_job(team, status=JobStatus.QUEUED, requested_hardware={"queue": "lab-gpus"})
    assert waiting_for(job).queue == "lab-gpus"


def test_gpus_are_grouped_by_vendor_model_arch_and_memory():
    mi = {"vendor": "amd", "model": "MI300X", "arch": "gfx942", "memory_bytes": 1}
    h = {"vendor": "nvidia", "model": "H200", "arch": "sm_90", "memory_bytes": 2}
    groups = gpu_groups({"gpus": [mi, mi, h, "not a gpu"]})
    assert groups == [{**mi, "count": 2}, {**h, "count": 1}]
    assert gpu_groups({}) == [] and gpu_groups({"gpus": "bogus"}) == []


def test_the_job_api_detail_says_where_a_queued_job_waits(api, team):
    make_worker("celery@busy", queues=["gpu-gfx942"], jobs_running=1)
    job = make_job(team, status=JobStatus.QUEUED, queue="gpu-gfx942", route_note="needs gfx942")
    waiting = api.get(f"/api/v1/jobs/{job.pk}/").json()["waiting"]
    assert waiting == {
        "queue": "gpu-gfx942",
        "default_queue": False,
        "route_note": "needs gfx942",
        "live_workers": ["celery@busy"],
        "busy_workers": ["celery@busy"],
        "note": "1 live worker consumes it, all busy: it runs when one of them finishes its job.",
    }
    ended = make_job(team, status=JobStatus.SUCCEEDED)
    assert api.get(f"/api/v1/jobs/{ended.pk}/").json()["waiting"] is None
    assert "waiting" not in api.get("/api/v1/jobs/").json()["results"][0]  # detail only
