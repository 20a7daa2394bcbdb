"""Celery tasks: thin wrappers that load the row and call the service."""

from __future__ import annotations

import logging
import re
import threading
import time
from typing import Any

from billiard.einfo import ExceptionWithTraceback
from billiard.exceptions import WorkerLostError
from celery import Task, shared_task
from celery.worker import state as worker_state
from celery.worker.request import Request
from django.conf import settings
from django.db import close_old_connections, connections

from jobs import services
from jobs.services.ingest import DATABASE_ERRORS
from jobs.services.run import LostMidRun
from jobs.services.schedules import fire_due_schedules

logger = logging.getLogger(__name__)

DB_RETRY_BASE_S = 2  # then 4, 8, ... up to DB_RETRY_MAX_S, ROCPATH_DB_RETRIES times
DB_RETRY_MAX_S = 60
END_LOST_RETRY_S = 0.5  # how often a lost run's end is tried while the database is down


class RunJobRequest(Request):
    """A job's message in the worker's main process, which outlives a killed pool child."""

    def on_failure(self, exc_info: Any, send_failed_event: bool = True, return_ok: bool = False):
        # Celery puts the message back (reject_on_worker_lost) and fires nothing else in
        # this process: no task_failure, no Task.on_failure (those run in the dead child).
        # The runner died with the child, so the job must be ended here and now; the
        # message put back then finds it ended and does nothing.
        how = _lost_how(
            exc_info.exception, cancelled=self._already_cancelled or self._already_revoked
        )
        if how is not None:
            self._end_lost_run(how)
        return super().on_failure(
            exc_info, send_failed_event=send_failed_event, return_ok=return_ok
        )

    def on_timeout(self, soft: bool, timeout: float) -> None:
        # The hard limit is the backstop for a follow loop that hung past the job's own
        # timeout: the pool kills the child, and with it the runner. End the job now,
        # saying so, rather than leave it running for the reaper.
        super().on_timeout(soft, timeout)
        if not soft and not worker_state.should_terminate:
            self._end_lost_run(f"the worker's hard time limit of {timeout:g} s")

    def _end_lost_run(self, how: str) -> None:
        job_id = self.args[0] if self.args else self.kwargs.get("job_id")
        if job_id is None:
            return
        # The database may be down (or this process's connection stale after sitting
        # idle): then a thread of this process tries on, on fresh connections, until it
        # answers. The job's message put back cannot end the job (it finds it running
        # under its own task id), and the reaper waits out its grace (a child killed in a
        # 3-s outage had its job ended 245 s later).
        args = (int(job_id), self.id or "", self.hostname or "", how)
        try:
            close_old_connections()
            _end_lost(*args)
        except DATABASE_ERRORS:
            connections.close_all()
            logger.warning("job %s: no database: its lost run is ended once it answers", job_id)
            threading.Thread(
                target=_end_lost_when_back, args=args, daemon=True, name=f"end-lost-{job_id}"
            ).start()
        except Exception:
            logger.exception("job %s: could not end it after its pool child was lost", job_id)


def _end_lost(job_id: int, task_id: str, worker: str, how: str) -> None:
    if services.end_lost_run(job_id, task_id=task_id, worker=worker, how=how):
        logger.warning("job %s: its pool child was lost (%s): ended", job_id, how)


def _end_lost_when_back(job_id: int, task_id: str, worker: str, how: str) -> None:
    """Try every END_LOST_RETRY_S while the database is down, for the running grace at
    most (the reaper's turn after that); the connection is this thread's, closed at the end."""
    deadline = time.monotonic() + settings.ROCPATH_RUNNING_GRACE_S
    try:
        while True:
            time.sleep(END_LOST_RETRY_S)
            try:
                _end_lost(job_id, task_id, worker, how)
                return
            except DATABASE_ERRORS:
                connections.close_all()
                if time.monotonic() >= deadline:
                    logger.warning("job %s: the database stayed down: left to the reaper", job_id)
                    return
            except Exception:
                logger.exception("job %s: could not end it after its pool child was lost", job_id)
                return
    finally:
        connections.close_all()


def _lost_how(exc: BaseException, *, cancelled: bool) -> str | None:
    """How the pool child went, as billiard said it ("signal 9 (SIGKILL)"); None when the
    failure is not a lost child (the task raised, or we terminated it ourselves)."""
    if isinstance(exc, ExceptionWithTraceback):
        exc = exc.exc
    if isinstance(exc, WorkerLostError):
        said = str(exc)
    elif isinstance(exc, SystemExit) and not cancelled:  # billiard >= 4.3 reports this too
        said = f"exitcode {exc.code}"
    else:
        return None
    found = re.search(r"signal \d+ \(\w+\)|exitcode -?\d+", said)
    return found.group(0) if found else said.removeprefix("Worker exited prematurely: ")[:200]


class RunJobTask(Task):
    Request = RunJobRequest


@shared_task(
    name="jobs.run_job",
    base=RunJobTask,
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    # The executor enforces each job's own timeout; this is the backstop.
    soft_time_limit=None,
    time_limit=settings.ROCPATH_JOB_TIMEOUT_MAX_S + 600,
)
def run_job(self, job_id: int, retry_of: str = "") -> str:
    try:
        outcome = services.execute_job(
            job_id,
            worker=self.request.hostname or "unknown",
            task_id=self.request.id or "",
            retry_of=retry_of,
        )
    except (*DATABASE_ERRORS, LostMidRun) as exc:
        # A lost database (a restart, a dropped connection) must not leave the job queued
        # or running with nobody on it: try this task again once the database may be back,
        # telling the next try when this one (or one before it) had claimed the job.
        # task_prerun drops the broken connection.
        retries = self.request.retries
        if retries >= settings.ROCPATH_DB_RETRIES:
            raise
        cause = exc.cause if isinstance(exc, LostMidRun) else exc
        if isinstance(exc, LostMidRun) and not retry_of:
            retry_of = str(exc)[:500]
        delay = min(DB_RETRY_BASE_S * 2**retries, DB_RETRY_MAX_S)
        logger.warning("job %s: database error, trying again in %s s: %s", job_id, delay, cause)
        raise self.retry(
            args=[job_id],
            kwargs={"retry_of": retry_of},
            countdown=delay,
            max_retries=settings.ROCPATH_DB_RETRIES,
        ) from exc
    logger.info("job %s: %s", job_id, outcome)
    return outcome


@shared_task(name="jobs.dispatch_jobs", ignore_result=True)
def dispatch_jobs() -> dict[str, list[int]]:
    return services.dispatch_jobs()


@shared_task(name="jobs.fire_schedules", ignore_result=True)
def fire_schedules() -> list[int]:
    """The due schedules' jobs (jobs.services.schedules); the ids of the jobs made."""
    return [f.job_id for f in fire_due_schedules() if f.job_id is not None]


@shared_task(name="jobs.reap_stuck_jobs", ignore_result=True)
def reap_stuck_jobs() -> list[int]:
    reaped = services.reap_stuck_jobs()
    # Containers live on the hosts of the workers that started them: ask every worker.
    from config.celery import app

    try:
        app.control.broadcast("rocpath_sweep_containers")
    except Exception:
        logger.warning("could not broadcast the container sweep", exc_info=True)
    return reaped


@shared_task(name="jobs.noop_task", ignore_result=False)
def noop_task() -> None:
    """A bare task: the anchor of bench/dispatch.py (what Celery and the broker cost alone)."""
