"""GPU leases: two jobs never share a GPU of a host, against the real database."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from django.utils import timezone

from jobs import leases, services
from jobs.choices import JobStatus
from jobs.executors.base import ExecutorError, JobSpec
from jobs.executors.gpu_profiles import GpuUnavailable, request_for
from jobs.executors.local import LocalExecutor, visible_devices
from jobs.models import GpuLease, Job
from tests.factories import make_job

TWO_H200 = {"gpus": [{"index": i, "vendor": "nvidia", "model": "NVIDIA H200"} for i in range(2)]}
FOUR_MI300X = {"gpus": [{"index": i, "vendor": "amd", "arch": "gfx942"} for i in range(4)]}


class Hooks:
    """Records what hold_gpus says; cancel when asked to."""

    def __init__(self, cancel_after: int | None = None) -> None:
        self.events: list[dict] = []
        self.polls = 0
        self.cancel_after = cancel_after

    def on_event(self, event: dict) -> None:
        self.events.append(event)

    def on_line(self, line: str, stream: str) -> None:
        pass

    def should_cancel(self) -> bool:
        self.polls += 1
        return self.cancel_after is not None and self.polls > self.cancel_after

    def heartbeat(self) -> None:
        pass


def _running(team, **hardware) -> Job:
    return make_job(team, status=JobStatus.RUNNING, requested_hardware=hardware)


def _spec(job: Job, tmp_path, timeout_s: int = 60) -> JobSpec:
    return JobSpec(
        job_id=job.pk,
        kind=job.kind,
        job_dir=tmp_path,
        timeout_s=timeout_s,
        hardware=dict(job.requested_hardware),
    )


def test_jobs_asking_for_one_gpu_each_get_different_gpus_until_none_is_left(team):
    request = request_for({"gpu_count": 1}, TWO_H200, None)
    first, second, third = (_running(team, gpu_count=1) for _ in range(3))
    assert leases.try_lease(first, request, "node1") == [0]
    assert leases.try_lease(second, request, "node1") == [1]
    assert leases.try_lease(third, request, "node1") is None
    assert leases.try_lease(third, request, "node2") == [0]  # another host's GPUs are its own
    leases.release(first)
    assert leases.try_lease(third, request, "node1") == [0]


def test_a_job_that_names_its_gpus_gets_exactly_those_or_none(team):
    holder = _running(team, gpu_indices=[1])
    wants_1 = request_for({"gpu_indices": [1]}, FOUR_MI300X, None)
    assert leases.try_lease(holder, wants_1, "h") == [1]
    wants_1_2 = request_for({"gpu_indices": [1, 2]}, FOUR_MI300X, None)
    assert leases.try_lease(_running(team), wants_1_2, "h") is None
    wants_0_3 = request_for({"gpu_indices": [0, 3]}, FOUR_MI300X, None)
    assert leases.try_lease(_running(team), wants_0_3, "h") == [0, 3]


def test_a_lease_whose_job_ended_is_stale_and_taken_over(team):
    request = request_for({"gpu_count": 2}, TWO_H200, None)
    lost = _running(team)
    assert leases.try_lease(lost, request, "h") == [0, 1]
    Job.objects.filter(pk=lost.pk).update(status=JobStatus.ERRORED)  # the reaper: worker lost
    taker = _running(team)
    assert leases.try_lease(taker, request, "h") == [0, 1]
    assert set(GpuLease.objects.values_list("job_id", flat=True)) == {taker.pk}


def test_a_worker_lends_only_the_gpus_it_is_given():
    assert request_for({"gpu_count": 1}, FOUR_MI300X, [2, 3]).candidates == [2, 3]
    with pytest.raises(GpuUnavailable, match="lends 2 amd GPUs"):
        request_for({"gpu_count": 3}, FOUR_MI300X, [2, 3])
    with pytest.raises(GpuUnavailable, match=r"lends amd GPUs \[2, 3\]"):
        request_for({"gpu_indices": [0]}, FOUR_MI300X, [2, 3])
    with pytest.raises(GpuUnavailable, match="no nvidia GPU"):
        request_for({"gpu_vendor": "nvidia", "gpu_count": 1}, FOUR_MI300X, None)
    assert request_for({}, FOUR_MI300X, None) is None


@pytest.mark.django_db(transaction=True)
def test_many_processes_racing_for_four_gpus_get_four_distinct_ones(team):
    request = request_for({"gpu_count": 1}, FOUR_MI300X, None)
    jobs = [_running(team, gpu_count=1) for _ in range(10)]
    got: dict[int, list[int] | None] = {}
    start = threading.Barrier(len(jobs))

    def take(job: Job) -> None:
        try:
            start.wait()
            got[job.pk] = leases.try_lease(job, request, "h")
        finally:
            connection.close()

    threads = [threading.Thread(target=take, args=(job,)) for job in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    leased = [indices for indices in got.values() if indices is not None]
    assert sorted(i for indices in leased for i in indices) == [0, 1, 2, 3]
    assert GpuLease.objects.count() == 4


def test_a_job_waits_while_its_gpu_is_held_says_by_whom_and_takes_it_when_freed(
    team, tmp_path, monkeypatch
):
    holder = _running(team)
    leases.try_lease(holder, request_for({"gpu_count": 2}, TWO_H200, None), leases.host())
    waiter = _running(team, gpu_vendor="nvidia", gpu_count=1)
    spec = _spec(waiter, tmp_path)
    hooks = Hooks()
    sleeps = []

    def sleep(seconds: float) -> None:  # the holder ends while the waiter sleeps
        sleeps.append(seconds)
        Job.objects.filter(pk=holder.pk).update(status=JobStatus.SUCCEEDED)

    monkeypatch.setattr(leases.time, "sleep", sleep)
    spec = leases.hold_gpus(waiter, spec, hooks, lambda: TWO_H200)
    messages = [e["message"] for e in hooks.events]
    assert messages[0].startswith("waiting for 1 nvidia GPU(s)")
    assert f"held by job(s) {holder.pk}" in messages[0]
    assert messages[1] == f"leased nvidia GPU(s) [0] of {leases.host()}"
    assert spec.hardware == {"gpu_vendor": "nvidia", "gpu_count": 1, "gpu_indices": [0]}
    assert len(sleeps) == 1
    env = LocalExecutor().environment(spec)
    assert (env["CUDA_VISIBLE_DEVICES"], env["CUDA_DEVICE_ORDER"]) == ("0", "PCI_BUS_ID")


def test_a_job_waiting_for_a_gpu_can_be_canceled_or_times_out(team, tmp_path, monkeypatch):
    holder = _running(team)
    leases.try_lease(holder, request_for({"gpu_count": 2}, TWO_H200, None), leases.host())
    monkeypatch.setattr(leases.time, "sleep", lambda s: None)
    waiter = _running(team, gpu_count=1)
    canceled = leases.hold_gpus(
        waiter, _spec(waiter, tmp_path), Hooks(cancel_after=2), lambda: TWO_H200
    )
    assert canceled is None
    ticks = iter(range(0, 1000, 30))
    with pytest.raises(ExecutorError, match="came free within the job's 60 s timeout"):
        leases.hold_gpus(
            waiter, _spec(waiter, tmp_path), Hooks(), lambda: TWO_H200, clock=lambda: next(ticks)
        )
    assert GpuLease.objects.filter(job=holder).count() == 2  # a waiter takes nothing


def test_the_time_spent_waiting_for_a_gpu_comes_out_of_the_jobs_timeout(
    team, tmp_path, monkeypatch
):
    holder = _running(team)
    leases.try_lease(holder, request_for({"gpu_count": 2}, TWO_H200, None), leases.host())
    waiter = _running(team, gpu_count=1)
    now = [0.0]

    def sleep(seconds: float) -> None:  # 25 s pass, and the holder ends
        now[0] += 25
        Job.objects.filter(pk=holder.pk).update(status=JobStatus.SUCCEEDED)

    monkeypatch.setattr(leases.time, "sleep", sleep)
    spec = leases.hold_gpus(
        waiter, _spec(waiter, tmp_path), Hooks(), lambda: TWO_H200, clock=lambda: now[0]
    )
    assert spec.timeout_s == 60 - 25


def test_a_cpu_job_never_asks_for_the_inventory(team, tmp_path):
    job = _running(team)
    spec = _spec(job, tmp_path)
    assert leases.hold_gpus(job, spec, Hooks(), lambda: pytest.fail("probed")) is spec


def test_local_runners_see_only_their_leased_gpus():
    assert visible_devices({"gpu_vendor": "amd", "gpu_indices": [2, 3]}) == {
        "ROCR_VISIBLE_DEVICES": "2,3",
        "HIP_VISIBLE_DEVICES": "0,1",
    }
    assert visible_devices({"gpu_vendor": "nvidia", "gpu_indices": [1]}) == {
        "CUDA_VISIBLE_DEVICES": "1",
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
    }
    assert visible_devices({}) == {}


def test_a_gpu_job_canceled_while_it_waits_ends_canceled_and_holds_nothing(team, monkeypatch):
    holder = _running(team)
    leases.try_lease(holder, request_for({"gpu_count": 2}, TWO_H200, None), leases.host())
    job = make_job(team, kind="noop", params={}, requested_hardware={"gpu_count": 1})
    job.mark_queued("task-x")

    def user_cancels(seconds: float) -> None:
        Job.objects.filter(pk=job.pk).update(cancel_requested_at=timezone.now())

    monkeypatch.setattr(leases.time, "sleep", user_cancels)
    monkeypatch.setattr("jobs.services.run.worker_inventory", lambda: TWO_H200)
    assert services.execute_job(job.pk, worker="w@h") == "canceled"
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELED
    messages = list(job.events.values_list("message", flat=True))
    assert any(m.startswith("waiting for 1 nvidia GPU(s)") for m in messages)
    assert not GpuLease.objects.filter(job=job).exists()


@pytest.mark.process
def test_a_gpu_job_runs_on_its_leased_gpu_and_gives_it_back(team, monkeypatch):
    holder = _running(team)
    leases.try_lease(holder, request_for({"gpu_indices": [0]}, TWO_H200, None), leases.host())
    job = make_job(team, kind="noop", params={}, requested_hardware={"gpu_count": 1})
    job.mark_queued("task-x")
    monkeypatch.setattr("jobs.services.run.worker_inventory", lambda: TWO_H200)
    assert services.execute_job(job.pk, worker="w@h") == JobStatus.SUCCEEDED
    messages = list(job.events.values_list("message", flat=True))
    assert f"leased nvidia GPU(s) [1] of {leases.host()}" in messages
    assert not GpuLease.objects.filter(job=job).exists()
    assert GpuLease.objects.filter(job=holder).exists()
