"""REST → Celery (Redis) → local executor → PostgreSQL, with a real worker process."""

from __future__ import annotations

import time

import pytest

from jobs import services
from jobs.choices import JobStatus
from tests.waits import JOB_S, STOP_S
from tests.workers import (
    TERMINAL,
    group_alive,
    runner_group,
    submit_long_job,
    wait_for_status,
    wait_until,
    wait_until_gone,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_a_probe_submitted_through_rest_reaches_succeeded_with_the_inventory(worker, api):
    response = api.post("/api/v1/jobs/", {"kind": "probe"}, format="json")
    assert response.status_code == 201
    job = wait_for_status(response.json()["id"], TERMINAL)
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert job.worker.startswith(worker.queue) and job.attempt == 1
    body = api.get(response["Location"]).json()
    assert body["status"] == "succeeded" and body["environment"] == job.environment_id
    environment = api.get(f"/api/v1/environments/{job.environment_id}/").json()
    assert environment["data"]["host"]["cpu_cores"] >= 1
    events = api.get(f"/api/v1/jobs/{job.pk}/events/").json()["events"]
    assert any(e["kind"] == "progress" for e in events)


def test_a_long_job_canceled_while_running_ends_canceled_and_its_processes_are_gone(worker, api):
    job_id = submit_long_job(api)
    pgid = runner_group(job_id)
    assert group_alive(pgid)
    assert api.post(f"/api/v1/jobs/{job_id}/cancel/").status_code == 202
    job = wait_for_status(job_id, TERMINAL, timeout=JOB_S)
    assert job.status == JobStatus.CANCELED
    assert wait_until_gone(pgid), "the runner's process group survived the cancel"


def test_a_worker_sigkilled_mid_job_leaves_it_errored_never_running_and_never_run_twice(
    worker, api
):
    job_id = submit_long_job(api)
    pgid = runner_group(job_id)
    assert group_alive(pgid)

    worker.sigkill_main_process()
    # The runner dies with its worker (PR_SET_PDEATHSIG through the pool process).
    assert wait_until_gone(pgid), "the runner outlived its worker"

    worker.start()  # same name: on start it ends what its previous life left running
    job = wait_for_status(job_id, TERMINAL, timeout=JOB_S)
    assert job.status == JobStatus.ERRORED and "worker lost" in job.error
    assert job.attempt == 1
    time.sleep(2)  # a late redelivery must not start it again
    job.refresh_from_db()
    assert job.status == JobStatus.ERRORED and job.attempt == 1
    assert not group_alive(pgid)


def test_the_reaper_ends_a_job_whose_worker_vanished(worker, api, settings):
    response = api.post(
        "/api/v1/jobs/", {"kind": "noop", "params": {"seconds": 120}}, format="json"
    )
    job_id = response.json()["id"]
    wait_for_status(job_id, {JobStatus.RUNNING})
    worker.sigkill_main_process()
    settings.ROCPATH_RUNNING_GRACE_S = 2
    assert wait_until(lambda: services.reap_stuck_jobs() == [job_id], STOP_S, 0.5)
    job = wait_for_status(job_id, TERMINAL)
    assert job.status == JobStatus.ERRORED and "no heartbeat" in job.error
