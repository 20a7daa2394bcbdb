"""Two real workers of different configured inventories announce themselves, and GPU jobs
submitted over REST are routed to the one that has what they ask for (jobs.fleet,
jobs.routing)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from jobs.choices import JobStatus
from jobs.models import JobEvent
from jobs.models import Worker as WorkerRow
from jobs.routing import arch_queue, host_queue
from tests.waits import START_S, STOP_S
from tests.workers import ROOT, TERMINAL, Worker, wait_for_status, wait_until, worker_env

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# The H200 the probe found (docs/results/probe-h200.json), and an AMD host as an operator
# configures one.
H200_PROBE = ROOT / "docs" / "results" / "probe-h200.json"
MI300X_HOST = {
    "gpus": [
        {
            "vendor": "amd",
            "model": "AMD Instinct MI300X",
            "arch": "gfx942",
            "memory_bytes": 192 * 2**30,
        }
    ],
    "software": {"rocm_version": "6.4.1"},
    "cpus": 8,
}


@dataclass
class Fleet:
    queue: str
    nvidia: Worker
    amd: Worker

    def row(self, worker: Worker) -> WorkerRow:
        return WorkerRow.objects.get(name__startswith=worker.name.split("@")[0] + "@")


@pytest.fixture
def fleet(transactional_db, settings, tmp_path) -> Iterator[Fleet]:
    """Two local workers of one deployment (one default queue), on two GPU hosts."""
    queue = f"fl-{uuid.uuid4().hex[:8]}"
    settings.CELERY_TASK_DEFAULT_QUEUE = queue  # the prefix of the capability queues too
    started = []
    for role, inventory in (("nv", str(H200_PROBE)), ("amd", json.dumps(MI300X_HOST))):
        handle = Worker(
            env=worker_env(
                settings,
                ROCPATH_QUEUE=queue,
                ROCPATH_EXECUTOR="local",
                ROCPATH_GPU_HOST=f"{queue}-{role}-host",
                ROCPATH_WORKER_INVENTORY=inventory,
                ROCPATH_WORKER_BEAT_S="1",
            ),
            name=f"{queue}-{role}@%h",
            queue=queue,
            log=tmp_path / f"worker-{role}.log",
        )
        handle.log.touch()
        started.append(handle)
    try:
        for handle in started:
            handle.start()
        yield Fleet(queue, *started)
    finally:
        for handle in started:
            handle.stop()


def submit(api, **hardware) -> object:
    return api.post(
        "/api/v1/jobs/",
        {"kind": "noop", "params": {"seconds": 0}, "hardware": hardware},
        format="json",
    )


def test_both_workers_announce_their_gpus_and_queues_and_beat(fleet):
    nvidia, amd = fleet.row(fleet.nvidia), fleet.row(fleet.amd)
    assert [g["arch"] for g in nvidia.inventory["gpus"]] == ["sm_90"]
    assert [g["model"] for g in amd.inventory["gpus"]] == ["AMD Instinct MI300X"]
    assert amd.inventory["cpus"] == 8 and nvidia.inventory["cpus"] >= 1
    assert nvidia.executor == amd.executor == "local"
    assert nvidia.host == f"{fleet.queue}-nv-host" and nvidia.stopped_at is None
    assert set(nvidia.queues) == {
        fleet.queue,
        arch_queue("nvidia", "sm_90"),
        host_queue(f"{fleet.queue}-nv-host"),
    }
    assert arch_queue("amd", "gfx942") in amd.queues
    # consumed, not only recorded: Celery says so in the worker's log
    fleet.amd.wait_for_log(f"Started consuming from {arch_queue('amd', 'gfx942')}")
    first = nvidia.last_seen_at
    assert wait_until(lambda: fleet.row(fleet.nvidia).last_seen_at > first, STOP_S, 0.2)
    assert nvidia.is_live and amd.is_live


def test_a_gpu_job_runs_on_the_worker_whose_gpu_it_asks_for(fleet, api):
    for hardware, runs_on in (
        ({"gpu_arch": "gfx942", "gpu_count": 1}, fleet.amd),
        ({"gpu_arch": "sm_90", "gpu_count": 1}, fleet.nvidia),
        ({"gpu_model": "h200"}, fleet.nvidia),
        ({"gpu_vendor": "amd", "gpu_memory_gb": 192}, fleet.amd),
    ):
        response = submit(api, **hardware)
        assert response.status_code == 201, response.content
        job = wait_for_status(response.json()["id"], TERMINAL)
        assert job.status == JobStatus.SUCCEEDED, job.error
        assert job.worker == fleet.row(runs_on).name, (hardware, job.worker)
        assert job.queue in fleet.row(runs_on).queues
        assert job.route_note.startswith(f"waiting on {job.queue}: consumed by 1 capable worker")
        # the configured GPU is leased on the worker's host, as a probed one would be
        host = fleet.row(runs_on).host
        assert JobEvent.objects.filter(job=job, message__contains=f"GPU(s) [0] of {host}").exists()


def test_what_no_live_worker_has_is_a_400_naming_the_property(fleet, api, settings):
    response = submit(api, gpu_count=1, gpu_arch="gfx90a")
    assert response.status_code == 400
    nvidia, amd = fleet.row(fleet.nvidia).name, fleet.row(fleet.amd).name
    assert response.json()["hardware"] == [
        "gpu_arch: no live worker has a gfx90a GPU "
        f"(the fleet has: gfx942 on {amd}; sm_90 on {nvidia})"
    ]
    assert (
        submit(api, gpu_count=2)
        .json()["hardware"][0]
        .startswith("gpu_count: no live worker has 2 GPUs")
    )
    settings.ROCPATH_JOB_QUEUES = {"*": ["nobody-consumes-this"]}
    response = submit(api, queue="nobody-consumes-this")
    assert response.status_code == 400
    assert "no live worker consumes 'nobody-consumes-this'" in response.json()["hardware"][0]
    assert submit(api, queue=arch_queue("amd", "gfx942")).status_code == 400  # not allowed
    settings.ROCPATH_JOB_QUEUES = {"*": [arch_queue("amd", "gfx942")]}
    response = submit(api, queue=arch_queue("amd", "gfx942"), gpu_count=1)
    assert response.status_code == 201, response.content
    job = wait_for_status(response.json()["id"], TERMINAL)
    assert job.status == JobStatus.SUCCEEDED and job.worker == amd


def test_a_stopped_worker_says_so_and_is_not_routed_to(fleet, api):
    fleet.amd.stop()
    amd = fleet.row(fleet.amd)
    assert amd.stopped_at is not None and not amd.is_live
    response = submit(api, gpu_arch="gfx942")
    assert response.status_code == 400
    assert response.json()["hardware"][0].startswith("gpu_arch: no live worker has a gfx942 GPU")
    assert submit(api, gpu_arch="sm_90").status_code == 201


def test_a_worker_not_seen_for_the_grace_period_is_gone_and_not_routed_to(fleet, api, settings):
    settings.ROCPATH_WORKER_GONE_S = 2
    fleet.nvidia.sigkill_main_process()  # no clean stop: it only stops beating
    assert wait_until(lambda: not fleet.row(fleet.nvidia).is_live, START_S, 0.2)
    assert fleet.row(fleet.nvidia).stopped_at is None
    response = submit(api, gpu_arch="sm_90")
    assert response.status_code == 400
    assert "(the fleet has: gfx942 on " in response.json()["hardware"][0]
    assert fleet.row(fleet.amd).is_live  # the other one beats on
