"""Recovery: end the jobs nobody is going to finish, remove the containers they left."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from config.broker import broker_started_at
from jobs.choices import JobStatus
from jobs.models import Job, JobEvent
from jobs.services.cancel import revoke
from jobs.services.dispatch import held_by_each_worker
from jobs.services.submit import queue_for

logger = logging.getLogger(__name__)


def reap_stuck_jobs() -> list[int]:
    """End jobs nobody is going to finish, each with what was seen when it was given up on."""
    now = timezone.now()
    reaped: list[int] = []
    running_grace = settings.ROCPATH_RUNNING_GRACE_S
    stale = Job.objects.filter(
        status=JobStatus.RUNNING, heartbeat_at__lt=now - timedelta(seconds=running_grace)
    )
    answering = _answering_workers({job.worker for job in stale if job.worker})
    if stale and (answering is None or (not answering and _broker_restarted_within(running_grace))):
        # The broker cannot be asked, or came back so lately that no worker has reconnected
        # yet: none would seem to answer, and every job whose heartbeat a database outage
        # left stale was reaped as lost (a 45-s outage, then a Redis restart: 7 of 2,000
        # jobs). Whether they are lost is told once the workers can answer again.
        logger.warning("reaper: the workers cannot be asked yet; running jobs wait a round")
        stale, answering = [], set()
    # A task that hit a lost database waits out its retry's pause (2, 4 … 60 s, up to
    # ROCPATH_DB_RETRIES times) on its worker, scheduled, while its job stays running
    # without a heartbeat: after an outage longer than the grace every such job looked
    # stuck and was reaped, though its next try would have queued it again. Left alone
    # while its live worker holds its task; once the retries are spent the task raises
    # and the next round finds it gone. Once its pause is over it waits for a slot,
    # reserved (a 45-s outage reaped two such jobs when only the scheduled ones were asked
    # for), then runs, active. The lists are asked one after another, each over a 1-s
    # timeout, in that order, so a task moving on meanwhile is seen in a later one. Asked
    # for scheduled and reserved only, three retries that came due in a backlog of 250
    # went from reserved to active between the asks and were reaped as they ran (a soak,
    # 3 of 2,008 jobs).
    held = (
        held_by_each_worker(("scheduled", "reserved", "active"), sorted(answering))
        if any(job.worker in answering for job in stale)
        else {}
    )
    started_after = now.timestamp() - running_grace
    for job in stale:
        since = f"{job.heartbeat_at:%Y-%m-%d %H:%M:%S} UTC"
        if job.worker in answering:
            # None: what its worker holds could not be asked, or its reply came late (a
            # loaded host, just after an outage: 4 of 2,000 jobs were reaped so).
            mine = None if held is None else held.get(job.worker)
            if mine is None:
                continue
            if job.task_id and job.task_id in mine:
                began = mine[job.task_id]
                if began is None or began >= started_after:
                    continue  # waiting its turn, or a retry that just started: it queues it
                # Running for a grace and more with no heartbeat: the task is hung.
                reason = (
                    f"the job stopped beating on {job.worker} since {since}, and its task "
                    f"still runs there: hung (reaped after {running_grace} s; see the "
                    "worker's log)"
                )
            else:
                # Its worker lives but holds its task no more: the task ended without
                # finishing the job (its database retries spent), or the worker dropped
                # the retry it held when its broker connection was lost (Celery clears
                # what a consumer held; Redis gives the message back only after its
                # visibility timeout, hours away). Either way nothing runs it: its runner
                # stops with the task. Queued again while it has attempts left; a soak
                # lost 8 of 2,020 jobs so, to a Redis restart while their retries waited.
                if _run_again(job, since, running_grace):
                    reaped.append(job.pk)
                continue
        else:
            reason = (
                f"worker lost: no heartbeat from {job.worker or 'its worker'} since {since}, "
                f"and it does not answer (reaped after {running_grace} s)"
            )
        if job.fail_to_run(reason):
            reaped.append(job.pk)
    queued_grace = settings.ROCPATH_QUEUED_GRACE_S
    waiting = list(
        Job.objects.filter(
            status=JobStatus.QUEUED, queued_at__lt=now - timedelta(seconds=queued_grace)
        )
    )
    consumed = _consumed_queues() if waiting else None
    for job in waiting:
        if job.fail_to_run(_not_picked_up(job, queued_grace, consumed)):
            revoke(job.task_id)
            reaped.append(job.pk)
    for job in Job.objects.filter(
        status=JobStatus.PENDING, created_at__lt=now - timedelta(seconds=queued_grace)
    ):
        if job.fail_to_run(
            f"the job queue could not be reached for {queued_grace} s: the job was never "
            "handed to a worker (is the broker up?)"
        ):
            reaped.append(job.pk)
    if reaped:
        logger.warning("reaped stuck jobs: %s", reaped)
    return reaped


def _run_again(job: Job, since: str, grace: int) -> bool:
    """Queue again (or end, its attempts spent) a job whose task its live worker no longer
    holds; True when it moved."""
    from jobs.executors.base import ExecutorError
    from jobs.services.run import retry_or_fail

    cause = (
        f"the job stopped beating on {job.worker} since {since}, and that worker still "
        f"answers but no longer holds its task (ended by a database error, or dropped with "
        f"its broker connection; found after {grace} s)"
    )
    moved = retry_or_fail(job, ExecutorError(cause, permanent=False))
    return not moved.startswith("ended elsewhere")


def _not_picked_up(job: Job, grace: int, consumed: set[str] | None) -> str:
    """Why a queued job never ran: nobody listens, the broker lost it, or the line is long."""
    from jobs.services.dispatch import RESENT

    queue = queue_for(job)
    resent = JobEvent.objects.filter(job_id=job.pk, message__startswith=RESENT).count()
    if consumed is not None and queue not in consumed:
        return f"no worker consumes queue {queue!r}: nobody took the job within {grace} s"
    if resent:
        return (
            f"the broker lost its message and re-sending it ({resent} times) did not help "
            f"within {grace} s (queue {queue!r})"
        )
    if consumed is not None:
        return (
            f"workers consume queue {queue!r} but none took the job within {grace} s: its "
            "backlog is longer than that"
        )
    return f"no worker picked the job up within {grace} s (queue {queue!r}: is a worker on it?)"


def _answering_workers(names: set[str]) -> set[str] | None:
    """Those of the named workers that answer a ping now (a second at most); None when
    they could not be asked (the broker is down): not the same as no answer."""
    if not names:
        return set()
    from config.celery import app

    try:
        replies = app.control.ping(destination=sorted(names), timeout=1.0)
    except Exception:
        logger.warning("reaper: could not ping the workers", exc_info=True)
        return None
    return {name for reply in replies for name in reply}


def _broker_restarted_within(seconds: int) -> bool:
    """Whether the broker's server started less than ``seconds`` ago (False where it
    cannot say): its workers may still be reconnecting, and cannot answer a ping."""
    try:
        started = broker_started_at()
    except Exception:
        return False
    return started is not None and timezone.now() - started < timedelta(seconds=seconds)


def _consumed_queues() -> set[str] | None:
    """The queues some worker consumes now; None when the workers could not be asked."""
    from config.celery import app

    try:
        replies = app.control.inspect(timeout=1.0).active_queues()
    except Exception:
        logger.warning("reaper: could not ask the workers for their queues", exc_info=True)
        return None
    return {queue["name"] for queues in (replies or {}).values() for queue in queues}


def sweep_containers() -> list[str]:
    """Remove this host's job containers whose job is no longer running (a lost worker's)."""
    from jobs.executors.docker import job_ids_of_containers, remove_containers

    on_host = job_ids_of_containers()
    if not on_host:
        return []
    running = set(
        Job.objects.filter(pk__in=on_host, status=JobStatus.RUNNING).values_list("pk", flat=True)
    )
    return remove_containers(jobs=on_host - running)


def sweep_slurm_jobs() -> list[str]:
    """scancel this deployment's Slurm jobs whose rocpath job no longer runs that attempt
    (a lost worker's, or an attempt that was given up on): their Slurm ids."""
    from jobs.executors.slurm import cancel_jobs, listed_jobs

    listed = listed_jobs()
    if not listed:
        return []
    running = dict(
        Job.objects.filter(
            pk__in={job for job, _ in listed.values()}, status=JobStatus.RUNNING
        ).values_list("pk", "attempt")
    )
    return cancel_jobs(keep=running)


def cancel_slurm_jobs_of(jobs: list[int]) -> list[str]:
    """scancel the Slurm jobs of rocpath jobs that were just ended (a restarted worker's)."""
    if not jobs:
        return []
    from jobs.executors.slurm import cancel_jobs

    return cancel_jobs(jobs=set(jobs))


def end_lost_run(job_id: int, *, task_id: str, worker: str, how: str = "") -> bool:
    """End the job the pool child that was running it took with it; True when it was ended.

    Called in the worker's main process when Celery reports the child lost (jobs.tasks):
    the runner dies with the child, so nobody will finish the job, and waiting for the
    reaper left it running for its grace and blamed a database or broker error. Only the
    run of this task on this worker is ended: a job queued again, claimed under another
    message, or already ended is left alone (the status guard of the move makes it once).
    Not run again: a process killed mid-run (the kernel's OOM killer, an operator) is
    likely to be killed again.
    """
    job = Job.objects.filter(
        pk=job_id, status=JobStatus.RUNNING, task_id=task_id, worker=worker
    ).first()
    if job is None or not task_id:
        return False
    if how.startswith("exitcode"):  # it exited by itself: "killed" would mislead
        went = f"exited mid-run ({how})"
    elif how.startswith("the worker's hard time limit"):
        went = f"was killed mid-run by {how} (the job's own timeout did not stop it)"
    else:
        went = f"was killed{f' ({how})' if how else ''} mid-run (out of memory, or by hand?)"
    return job.fail_to_run(
        f"worker lost: the process running the job on {worker} {went}; the job was not run again"
    )


def recover_worker_jobs(worker: str) -> list[int]:
    """A worker starting under a name ends the jobs its previous life left running."""
    ended = []
    for job in Job.objects.filter(status=JobStatus.RUNNING, worker=worker):
        if job.fail_to_run(f"worker lost: {worker} restarted while the job was running"):
            ended.append(job.pk)
    return ended
