"""Which GPUs of its worker's host a job runs on: leased, so that no two jobs share one.

A job that asks for GPUs (``hardware.gpu_count`` or ``gpu_indices``) gets them
leased before its executor starts, and gives them back when it ends. The lease
is a row per (host, vendor, index) with a unique constraint (jobs.models.GpuLease),
so it holds across a worker's prefork processes and across workers on one host.
While the GPUs it needs are held by others the job waits, saying so in its log,
until they are free, it is canceled, or its timeout passes. A lease whose job has
ended (a worker killed mid-job, say) is stale and is cleared by the next taker.

GPUs are numbered as in the worker's inventory (the probe's list for that vendor,
from 0); ``ROCPATH_WORKER_GPUS`` restricts which of them the worker lends.
"""

from __future__ import annotations

import dataclasses
import socket
import time
from collections.abc import Callable

from django.conf import settings
from django.db import IntegrityError, transaction

from jobs.choices import TERMINAL_STATUSES
from jobs.executors.base import ExecutionHooks, ExecutorError, JobSpec, log
from jobs.executors.gpu_profiles import GpuRequest, GpuUnavailable, request_for, wants_gpus
from jobs.models import GpuLease, Job

POLL_S = 1.0


def host() -> str:
    """The name leases are held under: GPUs are a host's, shared by its workers."""
    return settings.ROCPATH_GPU_HOST or socket.gethostname()


def try_lease(job: Job, request: GpuRequest, where: str) -> list[int] | None:
    """Lease the GPUs now, or None when others hold too many of them."""
    # Losing a race for one GPU (the unique constraint) says nothing of the others:
    # look again, at most once per GPU another process can have taken meanwhile.
    for _ in range(len(request.candidates) + 1):
        try:
            with transaction.atomic():
                free = _free(request, where)
                if len(free) < request.count:
                    # leases of jobs that ended without giving them back count for nothing
                    stale = GpuLease.objects.filter(
                        host=where, vendor=request.vendor, job__status__in=TERMINAL_STATUSES
                    ).delete()[0]
                    if stale:
                        free = _free(request, where)
                    if len(free) < request.count:
                        return None
                chosen = free[: request.count]
                GpuLease.objects.bulk_create(
                    GpuLease(host=where, vendor=request.vendor, index=i, job=job) for i in chosen
                )
                return chosen
        except IntegrityError:
            continue
    return None


def _free(request: GpuRequest, where: str) -> list[int]:
    held = set(
        GpuLease.objects.filter(host=where, vendor=request.vendor).values_list("index", flat=True)
    )
    return [i for i in request.candidates if i not in held]


def release(job: Job) -> None:
    """Give back every GPU the job holds (a CPU job costs no query)."""
    if wants_gpus(job.requested_hardware):
        GpuLease.objects.filter(job=job).delete()


def hold_gpus(
    job: Job,
    spec: JobSpec,
    hooks: ExecutionHooks,
    inventory: Callable[[], dict],
    *,
    poll_s: float = POLL_S,
    clock: Callable[[], float] = time.monotonic,
) -> JobSpec | None:
    """Lease the GPUs the job asked for, waiting while they are held; None if canceled.

    Returns the spec to run, whose ``hardware`` names the leased indices and vendor,
    which the executors pass on (device nodes or requests; *_VISIBLE_DEVICES), and
    whose timeout is what the wait left of the job's.
    Raises ExecutorError when this worker can never give them, or when none came
    free within the job's timeout. ``inventory`` (the worker's GPUs) is asked only
    when the job wants a GPU.
    """
    hardware = spec.hardware or {}
    if not wants_gpus(hardware):
        return spec
    try:
        request = request_for(hardware, inventory(), settings.ROCPATH_WORKER_GPUS)
    except GpuUnavailable as exc:
        raise ExecutorError(str(exc)) from exc
    assert request is not None  # wants_gpus said it asks for some
    where = host()
    started = clock()
    beat = started
    said = False
    while True:
        chosen = try_lease(job, request, where)
        if chosen is not None:
            log(hooks, f"leased {request.vendor} GPU(s) {chosen} of {where}")
            leased = {**hardware, "gpu_vendor": request.vendor, "gpu_indices": chosen}
            left = max(1, spec.timeout_s - int(clock() - started))
            return dataclasses.replace(spec, hardware=leased, timeout_s=left)
        if not said:
            holders = sorted(
                set(
                    GpuLease.objects.filter(host=where, vendor=request.vendor).values_list(
                        "job_id", flat=True
                    )
                )
            )
            log(
                hooks,
                f"waiting for {request.count} {request.vendor} GPU(s) of {where}: "
                f"held by job(s) {', '.join(map(str, holders)) or '…'}",
            )
            said = True
        if hooks.should_cancel():
            return None
        if clock() - started > spec.timeout_s:
            raise ExecutorError(
                f"no {request.vendor} GPU of {where} came free within the job's "
                f"{spec.timeout_s} s timeout"
            )
        if clock() - beat >= settings.ROCPATH_HEARTBEAT_S:
            hooks.heartbeat()
            beat = clock()
        time.sleep(poll_s)
