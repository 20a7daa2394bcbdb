"""Run: a worker claims a job, runs it on its executor and streams its events into rows."""

from __future__ import annotations

import json
import logging
import shutil
import time
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils import timezone

from jobs.choices import EventKind, JobStatus
from jobs.executors import ExecutorError, engine_class, get_executor, resolve_executor
from jobs.executors.base import JobSpec, Outcome
from jobs.executors.gpu_profiles import worker_inventory
from jobs.leases import hold_gpus
from jobs.leases import release as release_gpus
from jobs.models import Job, JobEvent
from jobs.services.ingest import DATABASE_ERRORS, conclude
from jobs.services.paths import cache_dir_for, job_dir
from jobs.services.submit import enqueue
from jobs.services.tuned_files import write_input
from jobs.storage import DiskFull, is_full
from stack.inference.registry import INPUT_FOLDER as MODEL_INPUT
from stack.inference.registry import RegistryError, resolve
from stack.tune.registry import INPUT_FOLDER as TUNED_INPUT
from teams.sources import tree_of

logger = logging.getLogger(__name__)


MAX_EVENTS_PER_JOB = 20_000
EVENT_FLUSH_S = 0.25
# A job whose executor fails for a reason that may pass (ExecutorError, permanent=False)
# runs at most MAX_ATTEMPTS times, the next attempt after these pauses.
MAX_ATTEMPTS = 3
RETRY_DELAYS_S = (10, 60)


@dataclass
class DatabaseHooks:
    """Streams the runner's events into JobEvent rows in small batches."""

    job: Job
    pending: list[JobEvent] = field(default_factory=list)
    progress: tuple[float, str] | None = None
    written: int = 0
    dropped: int = 0
    kept_bytes: int = 0  # of messages and metric data, kept or pending
    cut_at: int | None = None  # the byte count at which the log was cut, once it was
    last_flush: float = field(default_factory=time.monotonic)

    def _add(self, event: JobEvent, size: int) -> None:
        """Keep an event unless the job is past its count or byte cap (ROCPATH_EVENT_*)."""
        if self.written + len(self.pending) >= MAX_EVENTS_PER_JOB:
            self.dropped += 1
            return
        if self.cut_at is not None:
            self.dropped += 1
            return
        if self.kept_bytes + size > settings.ROCPATH_EVENT_BYTES_MAX:
            self.cut_at = self.kept_bytes
            self.dropped += 1
            self.pending.append(
                JobEvent(
                    job=self.job,
                    kind=EventKind.LOG,
                    level="warning",
                    message=f"log cut at {self.cut_at} bytes (ROCPATH_EVENT_BYTES_MAX): "
                    "further lines are dropped, progress is still shown",
                )
            )
            return
        self.kept_bytes += size
        self.pending.append(event)
        if time.monotonic() - self.last_flush >= EVENT_FLUSH_S or len(self.pending) >= 500:
            self.flush()

    def on_event(self, event: dict) -> None:
        name = event.get("event")
        if name == "progress":
            pct = _number(event.get("pct"), 0.0)
            pct = max(0.0, min(100.0, pct))
            message = str(event.get("message", ""))[:500]
            self.progress = (pct, message)  # honoured even once the log is cut
            self._add(
                JobEvent(job=self.job, kind=EventKind.PROGRESS, pct=pct, message=message),
                _size(message),
            )
        elif name == "metric":
            text = _cut(f"{event.get('name')} = {event.get('value')} {event.get('unit', '')}")
            data = json.dumps(event)
            if len(data) > settings.ROCPATH_EVENT_LINE_MAX_BYTES:
                event = {"event": "metric", "name": str(event.get("name"))[:200], "cut": True}
                data = json.dumps(event)
            self._add(
                JobEvent(job=self.job, kind=EventKind.METRIC, message=text.strip(), data=event),
                _size(text) + len(data),
            )
        else:
            level = str(event.get("level", "info"))[:16]
            message = _cut(str(event.get("message", "")))
            self._add(
                JobEvent(job=self.job, kind=EventKind.LOG, level=level, message=message),
                _size(message),
            )

    def on_line(self, line: str, stream: str) -> None:
        level = "info" if stream == "stdout" else "stderr"
        line = _cut(line)
        self._add(
            JobEvent(job=self.job, kind=EventKind.LOG, level=level, message=line), _size(line)
        )

    def should_cancel(self) -> bool:
        row = Job.objects.filter(pk=self.job.pk).values("status", "cancel_requested_at").first()
        return row is None or row["status"] != JobStatus.RUNNING or bool(row["cancel_requested_at"])

    def heartbeat(self) -> None:
        self.flush()
        self.job.beat()

    def flush(self, *, update_progress: bool = True) -> None:
        self.last_flush = time.monotonic()
        if self.pending:
            JobEvent.objects.bulk_create(self.pending)
            self.written += len(self.pending)
            self.pending = []
        if update_progress and self.progress is not None:
            pct, message = self.progress
            Job.objects.filter(pk=self.job.pk, status=JobStatus.RUNNING).update(
                progress=pct, progress_message=message
            )
            self.progress = None

    def close(self, *, update_progress: bool = True) -> float | None:
        """Write what is buffered; returns the last progress when not written here."""
        if self.dropped and self.cut_at is None:
            self.pending.append(
                JobEvent(
                    job=self.job,
                    kind=EventKind.LOG,
                    level="warning",
                    message=f"{self.dropped} further log lines were dropped "
                    f"(limit {MAX_EVENTS_PER_JOB} per job)",
                )
            )
        self.flush(update_progress=update_progress)
        return self.progress[0] if self.progress else None


def _cut(text: str) -> str:
    """One line within ROCPATH_EVENT_LINE_MAX_BYTES, whichever executor read it."""
    limit = settings.ROCPATH_EVENT_LINE_MAX_BYTES
    if len(text) <= limit // 4 or len(text.encode("utf-8", "replace")) <= limit:
        return text
    kept = text.encode("utf-8", "replace")[:limit].decode("utf-8", "ignore")
    return f"{kept} [line cut at {limit} bytes]"


def _size(text: str) -> int:
    return len(text.encode("utf-8", "replace"))


def _number(value: Any, default: float) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


class LostMidRun(Exception):
    """The database went away after this try had claimed its job: the next try of the task
    finds the job running under its own id and queues it again (jobs.tasks)."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(f"{type(cause).__name__}: {cause}")
        self.cause = cause


def execute_job(job_id: int, *, worker: str, task_id: str = "", retry_of: str = "") -> str:
    """Claim and run one job; returns what happened, for the task's log line.

    ``retry_of``: the error with which an earlier try of this same task lost the database
    after it had claimed the job (LostMidRun; the task is tried again, jobs.tasks): the job
    is still "running" under this task id, its runner stopped, and is queued again with that
    cause. A try that lost the database before it claimed anything passes none on: the
    message Celery puts back when a pool child is killed, say, must not take the job the
    killed child ran for its own, and run it again (the worker's main process ends it).
    """
    job = Job.objects.filter(pk=job_id).first()
    if job is None:
        return "gone"
    if job.status == JobStatus.RUNNING and retry_of and task_id and job.task_id == task_id:
        cause = f"the database connection was lost while the job ran ({retry_of})"
        return retry_or_fail(job, ExecutorError(cause, permanent=False))
    if job.status == JobStatus.RUNNING:
        return _redelivered(job)
    if job.status != JobStatus.QUEUED:
        return f"skipped: {job.status}"
    executor_name = resolve_executor()  # cached per process
    if not job.claim(worker, task_id=task_id, executor=executor_name):
        return "skipped: claimed elsewhere, or sent again under another task id"
    try:
        return _run_claimed(job, worker, executor_name)
    except DATABASE_ERRORS as exc:
        raise LostMidRun(exc) from exc


def _run_claimed(job: Job, worker: str, executor_name: str) -> str:
    folder = job_dir(job.pk)
    spec = JobSpec(
        job_id=job.pk,
        kind=job.kind,
        job_dir=folder,
        timeout_s=job.timeout_s,
        image=job.image,
        hardware=job.requested_hardware,
        worker=worker,
        attempt=job.attempt,
        inputs={"src": tree_of(job.source)} if job.source_id else {},
        cache_dir=cache_dir_for(job) if job.source_id else None,
    )
    hooks = DatabaseHooks(job)
    try:
        if folder.exists():  # a leftover from an earlier attempt must not leak into this one
            shutil.rmtree(folder)
        folder.mkdir(parents=True)  # the executor makes out/ and work/ in prepare()
        if job.tuned_file_id:  # a registered tuned GEMM file: WORK/tunableop in the job
            spec.inputs[TUNED_INPUT] = write_input(job.tuned_file, folder / "tuned-input")
        model = registered_model(job)
        if model is not None:  # a model folder from this worker's registry: WORK/model
            spec.inputs[MODEL_INPUT] = model
        spec.params_file.write_text(json.dumps(job.params))
        # An engine whose scheduler allocates GPUs (Slurm) gets no lease of this worker's.
        if engine_class(executor_name).allocates_gpus:
            held = spec
        else:
            held = hold_gpus(job, spec, hooks, worker_inventory)
        if held is None:
            outcome = Outcome(canceled=True)  # while it waited for a GPU
        else:
            spec = held
            outcome = get_executor(executor_name).run(spec, hooks)
    except ExecutorError as exc:
        hooks.close()
        return retry_or_fail(job, exc)
    except DATABASE_ERRORS:
        raise  # the task tries again (jobs.tasks.run_job); ending the job here lost it
    except Exception as exc:
        hooks.close()
        logger.exception("job %s: executor crashed", job.pk)
        job.fail_to_run(
            str(DiskFull(exc.filename or folder, exc.errno))  # names the path and the room
            if is_full(exc)
            else f"internal error while running the job: {type(exc).__name__}: {exc}"
        )
        return "errored"
    finally:
        release_gpus(job)
    return conclude(job, spec, outcome, hooks)


def registered_model(job: Job) -> Path | None:
    """The folder a job's ``registered_model`` names in this worker's registry, or None
    when it names none. A name the registry refuses ends the job: nothing else could
    make it resolve on a retry (ExecutorError, permanent)."""
    name = (job.params or {}).get("registered_model")
    if not name:
        return None
    try:
        return resolve(settings.ROCPATH_MODEL_ROOT, name)
    except RegistryError as exc:
        raise ExecutorError(f"registered model: {exc}", permanent=True) from None


def retry_or_fail(job: Job, error: ExecutorError) -> str:
    """Queue the job again after a pause when its executor's error may pass (an engine
    that did not answer) and it has attempts left; else end it errored with the error.

    A job whose cancel was asked for is not queued again. The attempt that failed
    stays in the job's log, and the status line says when the next one starts.
    """
    attempt = job.attempt
    if error.permanent or attempt >= MAX_ATTEMPTS:
        job.fail_to_run(str(error))
        return "errored"
    if Job.objects.filter(pk=job.pk, cancel_requested_at__isnull=False).exists():
        job.fail_to_run(str(error))
        return "errored"
    delay = RETRY_DELAYS_S[attempt - 1]
    note = f"attempt {attempt} of {MAX_ATTEMPTS} could not run ({error}): again in {delay} s"
    if not enqueue(job, countdown=delay, note=note):
        return f"ended elsewhere: {Job.objects.get(pk=job.pk).status}"
    return "queued again"


def _redelivered(job: Job) -> str:
    """A second delivery of a job that is already running: never run it twice."""
    grace = timedelta(seconds=settings.ROCPATH_RUNNING_GRACE_S)
    if job.heartbeat_at and job.heartbeat_at > timezone.now() - grace:
        return "skipped: running elsewhere"
    job.fail_to_run(
        f"worker lost: {job.worker or 'the worker'} stopped while running the job "
        f"(last heartbeat {job.heartbeat_at:%Y-%m-%d %H:%M:%S} UTC)"
        if job.heartbeat_at
        else "worker lost before the job started"
    )
    return "errored: worker lost"


def events_after(job: Job, cursor: int, limit: int = 500) -> list[JobEvent]:
    return list(JobEvent.objects.filter(job=job, id__gt=cursor).order_by("id")[:limit])
