"""Actions that change jobs: submit, enqueue, run, ingest, cancel, reap.

Views, the CLI, Celery tasks and schedules all come through here, so a job is
created, queued and concluded the same way whoever launched it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import mimetypes
import re
import shutil
import signal
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from config.celery import queue_task
from jobs.choices import EventKind, JobStatus, LaunchType
from jobs.executors import ExecutorError, get_executor, resolve_executor
from jobs.executors.base import JobSpec, Outcome
from jobs.executors.gpu_profiles import worker_inventory
from jobs.leases import hold_gpus
from jobs.leases import release as release_gpus
from jobs.models import Artifact, Environment, IllegalTransition, Job, JobEvent, Measurement
from jobs.outputs import Collected, Refused, collect_artifacts, read_result
from jobs.param_caps import param_cap_errors
from stack import contract
from stack.kinds import KINDS, ParamsError, validate_params
from teams.access import writable_team_ids
from teams.models import AdoptionProject, SourceSnapshot, Team
from teams.sources import newest_ready, tree_of

logger = logging.getLogger(__name__)

MAX_EVENTS_PER_JOB = 20_000
EVENT_FLUSH_S = 0.25


class SubmissionError(Exception):
    """Bad submission input, as field errors (the API turns it into a 400)."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__("; ".join(f"{k}: {' '.join(v)}" for k, v in errors.items()))
        self.errors = errors


# --- paths ---------------------------------------------------------------------
def job_dir(job_id: int) -> Path:
    return Path(settings.ARTIFACT_ROOT) / "jobs" / str(job_id)


def cache_dir_for(job: Job) -> Path:
    """A per-project, per-kind folder that outlives jobs (e.g. hipify findings by file hash)."""
    owner = f"project-{job.project_id}" if job.project_id else f"team-{job.team_id}"
    return Path(settings.ARTIFACT_ROOT) / "cache" / job.kind / owner


def artifact_dir(job_id: int) -> Path:
    """Where a job's artifacts are kept: copies the server made, in a folder the job never
    had mounted or writable (out/ is the job's, and anything in it may be swapped)."""
    return job_dir(job_id) / "artifacts"


def artifact_file(artifact: Artifact) -> Path:
    """The artifact's copy, refusing any path that would leave the job's artifact folder."""
    root = artifact_dir(artifact.job_id).resolve()
    path = (root / artifact.path).resolve()
    if not path.is_relative_to(root):
        raise FileNotFoundError(artifact.path)
    return path


# --- submit --------------------------------------------------------------------
def submit_job(
    *,
    user: Any,
    kind: str,
    params: dict | None = None,
    team: Team | None = None,
    project: AdoptionProject | None = None,
    hardware: dict | None = None,
    timeout_s: int | None = None,
    launch_type: str = LaunchType.MANUAL,
    rerun_of: Job | None = None,
    image: str = "",
    source: SourceSnapshot | None = None,
) -> Job:
    """Validate and create a job; it is queued once the surrounding transaction commits."""
    errors: dict[str, list[str]] = {}
    writable = writable_team_ids(user) if user is not None else None
    if project is None and source is not None:
        project = source.project  # a snapshot names its project, and so its team
    if team is None and project is not None:
        team = project.team
    if team is None:
        if writable and len(writable) == 1:
            team = Team.objects.get(pk=writable[0])
        else:
            errors["team"] = ["Choose the team this job belongs to."]
    elif writable is not None and team.pk not in writable:
        errors["team"] = ["You cannot submit jobs for this team."]
    if project is not None and team is not None and project.team_id != team.pk:
        errors["project"] = ["This project belongs to another team."]

    if kind == "compile-check" and project is not None and "targets" not in (params or {}):
        # A project says which GPUs it is ported for: compile for their architectures,
        # whichever way the job comes (page, REST, CLI), unless it names its own.
        params = {**(params or {}), "targets": project.compile_targets()}
    clean_params: dict = {}
    spec = KINDS.get(kind)
    if spec is None:
        errors["kind"] = [f"Unknown job kind {kind!r}; known kinds: {', '.join(sorted(KINDS))}."]
    else:
        try:
            clean_params = validate_params(kind, params or {})
        except ParamsError as exc:
            errors["params"] = [f"{name}: {m}" for name, msgs in exc.errors.items() for m in msgs]
        if capped := param_cap_errors(kind, clean_params, spec.params_schema):
            errors.setdefault("params", []).extend(capped)

    limit = settings.ROCPATH_JOB_TIMEOUT_MAX_S
    if timeout_s is not None and not (1 <= timeout_s <= limit):
        errors["timeout_s"] = [f"Must be between 1 and {limit} seconds."]
    if spec is not None:
        project, source = _resolve_source(spec, project, source, errors)
    if hardware is not None and (hardware_errors := validate_hardware(hardware)):
        errors["hardware"] = hardware_errors
    if image and not any(image.startswith(p) for p in settings.ROCPATH_IMAGE_ALLOW):
        errors["image"] = [
            f"Images must start with one of: {', '.join(settings.ROCPATH_IMAGE_ALLOW)}."
        ]
    if errors:
        raise SubmissionError(errors)
    assert spec is not None and team is not None

    with transaction.atomic():
        job = Job.objects.create(
            kind=kind,
            params=clean_params,
            team=team,
            project=project,
            created_by=user if getattr(user, "is_authenticated", False) else None,
            requested_hardware=hardware or {},
            executor=settings.ROCPATH_EXECUTOR,
            image=image or image_for(kind),
            launch_type=launch_type,
            rerun_of=rerun_of,
            source=source,
            timeout_s=min(timeout_s or spec.default_timeout_s, limit),
        )
        transaction.on_commit(lambda: enqueue(job))
    return job


def rerun_job(original: Job, *, user: Any) -> Job:
    """The same kind and parameters again; a job that reads source gets the newest snapshot."""
    return submit_job(
        user=user,
        kind=original.kind,
        params=original.params,
        team=original.team,
        project=original.project,
        hardware=original.requested_hardware,
        timeout_s=original.timeout_s,
        launch_type=LaunchType.RERUN,
        rerun_of=original,
        image=original.image,
    )


def _resolve_source(
    kind: Any, project: AdoptionProject | None, source: SourceSnapshot | None, errors: dict
) -> tuple[AdoptionProject | None, SourceSnapshot | None]:
    """The code snapshot a kind that reads source gets: the one asked for, or the newest."""
    if not kind.takes_source:
        if source is not None:
            errors["source"] = [f"Jobs of kind {kind.name} do not read source code."]
        return project, None
    if source is not None:
        if project is not None and source.project_id != project.pk:
            errors["source"] = ["This source belongs to another project."]
        elif source.status != SourceSnapshot.Status.READY:
            errors["source"] = [f"Source {source.pk} is {source.status}, not ready."]
        return project or source.project, source
    if project is None:
        errors["project"] = [f"Jobs of kind {kind.name} scan a project's code: choose the project."]
        return project, None
    source = newest_ready(project)
    if source is None:
        errors["source"] = [
            f"Project {project.name!r} has no source code yet: upload an archive or add a git URL."
        ]
    return project, source


MAX_GPUS_PER_JOB = 64
MAX_GPU_INDEX = 1023
QUEUE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


def _bounded(kinds: tuple[type, ...], low: float, high: float) -> Callable[[object], str | None]:
    names = " or ".join(k.__name__ for k in kinds)

    def check(value: object) -> str | None:
        if isinstance(value, bool) or not isinstance(value, kinds):
            return f"must be {names}"
        if value < 0:
            return "must not be negative"
        if not low <= value <= high:
            return f"must be between {low} and {high}"
        return None

    return check


def _gpu_indices(value: object) -> str | None:
    if not isinstance(value, list):
        return "must be a list of GPU indices"
    if not 1 <= len(value) <= MAX_GPUS_PER_JOB:
        return f"must list between 1 and {MAX_GPUS_PER_JOB} indices"
    if any(isinstance(i, bool) or not isinstance(i, int) or i < 0 for i in value):
        return "must be a list of non-negative integers"
    if max(value) > MAX_GPU_INDEX:
        return f"indices must be at most {MAX_GPU_INDEX}"
    if len(set(value)) != len(value):
        return "must not name a GPU twice"
    return None


def _queue(value: object) -> str | None:
    if not isinstance(value, str) or not QUEUE_NAME.fullmatch(value):
        return "must be a queue name: letters, digits, - and _, at most 64 characters"
    return None


def _gpu_vendor(value: object) -> str | None:
    return None if value in ("amd", "nvidia") else "must be amd or nvidia"


# The schema of a job's hardware request: each field's check says what is wrong, or None.
# The executors then clamp the limits to the server's caps.
HARDWARE_FIELDS: dict[str, Callable[[object], str | None]] = {
    "queue": _queue,
    "gpu_vendor": _gpu_vendor,
    "gpu_count": _bounded((int,), 0, MAX_GPUS_PER_JOB),
    "gpu_indices": _gpu_indices,
    "memory_mb": _bounded((int,), 16, 16 * 1024 * 1024),
    "cpus": _bounded((int, float), 0.01, 4096),
    "pids": _bounded((int,), 8, 4 * 1024 * 1024),
}


def validate_hardware(hardware: object) -> list[str]:
    """What a job may ask of its worker, each problem as "field: what is wrong"."""
    if not isinstance(hardware, dict):
        return ["Must be an object."]
    problems = []
    for key, value in hardware.items():
        check = HARDWARE_FIELDS.get(key)
        if check is None:
            problems.append(f"{str(key)[:64]}: unknown field (known: {', '.join(HARDWARE_FIELDS)})")
        elif problem := check(value):
            problems.append(f"{key}: {problem}")
    return problems


def image_for(kind: str) -> str:
    """The container image that runs a kind unless the job names one."""
    return settings.ROCPATH_KIND_IMAGES.get(kind, settings.ROCPATH_IMAGE)


def queue_for(job: Job) -> str:
    """Jobs that ask for particular hardware go to the queue of the workers that have it."""
    queue = (job.requested_hardware or {}).get("queue")
    return str(queue) if queue else settings.CELERY_TASK_DEFAULT_QUEUE


RUN_TASK = "jobs.run_job"  # jobs/tasks.py


def enqueue(job: Job) -> None:
    """Mark the job queued under a new task id and queue its run (by name: jobs.tasks
    imports this module)."""
    task_id = str(uuid.uuid4())
    if not job.mark_queued(task_id):
        return  # canceled before it could be queued
    queue_task(
        RUN_TASK,
        job.pk,
        task_id=task_id,
        queue=queue_for(job),
        on_error=lambda exc: job.fail_to_run(f"could not reach the job queue: {exc}"),
    )


# --- cancel ----------------------------------------------------------------------
def cancel_job(job: Job, *, by: str) -> Job:
    """Cancel a job; a running one is killed by its worker, which then ends it."""
    for _ in range(3):
        if job.is_terminal:
            raise IllegalTransition(f"job {job.pk} already ended ({job.status})")
        if job.status in (JobStatus.PENDING, JobStatus.QUEUED):
            if job.cancel(f"canceled by {by}"):
                _revoke(job.task_id)
                return job
        elif job.status == JobStatus.RUNNING:
            if job.request_cancel():
                JobEvent.objects.create(
                    job=job,
                    kind=EventKind.LOG,
                    level="warning",
                    message=f"cancel requested by {by}",
                )
            return job
        job.refresh_from_db()  # moved under us: look again
    return job


def _revoke(task_id: str) -> None:
    if not task_id:
        return
    from config.celery import app

    try:
        app.control.revoke(task_id)
    except Exception:  # revoke is an optimisation; the claim check is the guarantee
        logger.warning("could not broadcast revoke for task %s", task_id, exc_info=True)


# --- run -------------------------------------------------------------------------
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


def execute_job(job_id: int, *, worker: str) -> str:
    """Claim and run one job; returns what happened, for the task's log line."""
    job = Job.objects.filter(pk=job_id).first()
    if job is None:
        return "gone"
    if job.status == JobStatus.RUNNING:
        return _redelivered(job)
    if job.status != JobStatus.QUEUED:
        return f"skipped: {job.status}"
    executor_name = resolve_executor()  # cached per process
    if not job.claim(worker, executor=executor_name):
        return "skipped: claimed elsewhere"
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
        spec.params_file.write_text(json.dumps(job.params))
        held = hold_gpus(job, spec, hooks, worker_inventory)
        if held is None:
            outcome = Outcome(canceled=True)  # while it waited for a GPU
        else:
            spec = held
            outcome = get_executor(executor_name).run(spec, hooks)
    except ExecutorError as exc:
        hooks.close()
        job.fail_to_run(str(exc))
        return "errored"
    except Exception as exc:
        hooks.close()
        logger.exception("job %s: executor crashed", job.pk)
        job.fail_to_run(f"internal error while running the job: {type(exc).__name__}: {exc}")
        return "errored"
    finally:
        release_gpus(job)
    return conclude(job, spec, outcome, hooks)


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


@dataclass
class Gathered:
    """What the worker read back from a job's out folder, before the conclude transaction."""

    result: dict | None = None
    problem: str = ""  # why there is no usable result (the job's error), when there is none
    collected: Collected | None = None  # the artifacts copied into artifact_dir()


def gather(job: Job, spec: JobSpec, outcome: Outcome) -> Gathered:
    """Read result.json and copy the artifacts out, outside any transaction.

    Reading what a job left may take long (gigabytes of artifacts) and none of it may
    block or follow a link (jobs/outputs.py); done here, nothing of it holds a lock.
    """
    gathered = Gathered()
    if outcome.oom_killed or outcome.signal is not None or outcome.limit_exceeded:
        return gathered  # ended errored without reading anything it left
    if not (outcome.canceled or outcome.timed_out):
        gathered.result, gathered.problem = _read_result(job, spec, outcome)
        if gathered.result is None:
            return gathered
    gathered.collected = collect_artifacts(
        spec.out_dir,
        artifact_dir(job.pk),
        skip=contract.RESULT_FILENAME,
        max_file_bytes=settings.ROCPATH_ARTIFACT_MAX_BYTES,
        max_total_bytes=settings.ROCPATH_OUT_MAX_BYTES,
        max_entries=settings.ROCPATH_OUT_MAX_FILES,
    )
    return gathered


def _read_result(job: Job, spec: JobSpec, outcome: Outcome) -> tuple[dict | None, str]:
    """The job's validated result, or None and the reason it cannot be used."""
    tail = "\n".join(outcome.stderr_tail[-15:])
    try:
        raw = read_result(
            spec.out_dir,
            contract.RESULT_FILENAME,
            max_bytes=settings.ROCPATH_RESULT_MAX_BYTES,
            cap_name="ROCPATH_RESULT_MAX_BYTES",
        )
    except FileNotFoundError:
        return None, (
            f"runner exited with code {outcome.exit_code} without writing result.json"
            + (f"\n{tail}" if tail else "")
        )
    except Refused as exc:
        return None, f"{exc}: the result was refused"
    except OSError as exc:
        return None, f"result.json could not be read: {exc.strerror or exc}"
    try:
        result = json.loads(raw)
        contract.validate_result(result)
    except (ValueError, RecursionError, contract.ContractError) as exc:
        return None, f"result.json is invalid: {str(exc)[:2000]}"
    if result["kind"] != job.kind:
        return None, f"result.json is for kind {result['kind']!r}, not this job's {job.kind!r}"
    summary_bytes = len(json.dumps(result["summary"]))
    if summary_bytes > settings.ROCPATH_SUMMARY_MAX_BYTES:
        return None, (
            f"result.json refused: its summary is {summary_bytes} bytes, over the cap of "
            f"{settings.ROCPATH_SUMMARY_MAX_BYTES} bytes (ROCPATH_SUMMARY_MAX_BYTES)"
        )
    return result, ""


def conclude(job: Job, spec: JobSpec, outcome: Outcome, hooks: DatabaseHooks | None = None) -> str:
    """Turn the executor's outcome and result.json into the job's final state.

    The out folder is read first, outside the transaction (gather). Then one
    transaction: the last log lines, the measurements, the artifacts and the final
    status commit together (and a job that something else ended meanwhile keeps that
    ending: its row no longer says running, so nothing is added). The job's out/ is
    removed afterwards: what it produced lives on as the copies in artifact_dir().
    """
    gathered = gather(job, spec, outcome)
    try:
        with transaction.atomic():
            progress = hooks.close(update_progress=False) if hooks else None
            verdict = _conclude(job, spec, outcome, progress, gathered)
    finally:
        with contextlib.suppress(OSError):
            shutil.rmtree(spec.out_dir, ignore_errors=True)
    if not Artifact.objects.filter(job_id=job.pk).exists():
        shutil.rmtree(artifact_dir(job.pk), ignore_errors=True)  # copied for nothing
    return verdict


def _conclude(
    job: Job, spec: JobSpec, outcome: Outcome, progress: float | None, gathered: Gathered
) -> str:
    tail = "\n".join(outcome.stderr_tail[-15:])
    if outcome.image_digest:
        Job.objects.filter(pk=job.pk).update(image=outcome.image, image_digest=outcome.image_digest)
        job.image, job.image_digest = outcome.image, outcome.image_digest
    if outcome.canceled:
        job.refresh_from_db()
        if job.status != JobStatus.RUNNING:
            return f"ended elsewhere: {job.status}"
        if job.finish(
            JobStatus.CANCELED,
            exit_code=outcome.exit_code,
            error="canceled while running",
            progress=progress,
        ):
            _register_artifacts(job, gathered.collected, declared=[])
        return "canceled"
    if outcome.limit_exceeded:
        job.finish(
            JobStatus.ERRORED,
            exit_code=outcome.exit_code,
            error=outcome.limit_exceeded,
            progress=progress,
        )
        return "errored: over a limit"
    if outcome.oom_killed:
        job.finish(
            JobStatus.ERRORED,
            exit_code=outcome.exit_code,
            error=f"out of memory: the container went over its "
            f"{outcome.memory_limit_mb} MiB limit and was killed" + (f"\n{tail}" if tail else ""),
            progress=progress,
        )
        return "errored: out of memory"
    if outcome.timed_out:
        if job.finish(
            JobStatus.ERRORED,
            exit_code=outcome.exit_code,
            error=f"timed out after {job.timeout_s} s",  # waiting for a GPU counts too
            progress=progress,
        ):
            _register_artifacts(job, gathered.collected, declared=[])
        return "errored: timeout"
    if outcome.signal is not None:
        name = (
            signal.Signals(outcome.signal).name
            if outcome.signal in signal.valid_signals()
            else str(outcome.signal)
        )
        hint = " (killed from outside: out of memory?)" if outcome.signal == signal.SIGKILL else ""
        job.finish(
            JobStatus.ERRORED,
            error=f"runner killed by signal {name}{hint}\n{tail}".strip(),
            progress=progress,
        )
        return "errored: signal"
    if gathered.result is None:
        job.finish(
            JobStatus.ERRORED,
            exit_code=outcome.exit_code,
            error=gathered.problem,
            progress=progress,
        )
        return (
            "errored: no result" if "without writing" in gathered.problem else "errored: bad result"
        )
    return ingest_result(
        job, gathered.result, gathered.collected, exit_code=outcome.exit_code, progress=progress
    )


def ingest_result(
    job: Job,
    result: dict,
    collected: Collected | None,
    *,
    exit_code: int | None,
    progress: float | None = None,
) -> str:
    """Store a result.json that gather() read and checked; the caller holds the transaction."""
    status = {
        contract.SUCCEEDED: JobStatus.SUCCEEDED,
        contract.FAILED: JobStatus.FAILED,
        contract.ERRORED: JobStatus.ERRORED,
    }[result["status"]]
    environment = (
        record_environment(result["environment"], image=job.image, image_digest=job.image_digest)
        if result.get("environment")
        else None
    )
    # The status move first: if the job was ended elsewhere, nothing else is written.
    if not job.finish(
        status,
        exit_code=exit_code,
        error=result.get("error") or "",
        summary=result.get("summary") or {},
        environment_id=environment.pk if environment else None,
        progress=progress,
    ):
        return f"ended elsewhere: {Job.objects.get(pk=job.pk).status}"
    Measurement.objects.bulk_create(
        Measurement(
            job=job,
            environment=environment,
            benchmark=m["benchmark"],
            case=m.get("case") or {},
            metric=m["metric"],
            unit=m["unit"],
            value=m["value"],
            samples=m.get("samples") or [],
            better=m["better"],
        )
        for m in result.get("measurements", [])
    )
    _register_artifacts(job, collected, declared=result.get("artifacts", []))
    return status


def _register_artifacts(job: Job, collected: Collected | None, *, declared: list[dict]) -> None:
    """Record every file copied out of out/ (result.json aside), declared or not, and say
    which files were refused (links, FIFOs, hard links, over a cap), one warning each."""
    if collected is None:
        return
    described = {a["path"]: a for a in declared}
    rows = []
    for copied in collected.artifacts:
        meta = described.get(copied.path, {})
        content_type = meta.get("content_type") or (
            mimetypes.guess_type(copied.path)[0] or "application/octet-stream"
        )
        rows.append(
            Artifact(
                job=job,
                path=copied.path,
                size=copied.size,
                sha256=copied.sha256,
                content_type=content_type[:200],
                description=str(meta.get("description", ""))[:500],
            )
        )
    Artifact.objects.bulk_create(rows, ignore_conflicts=True)
    JobEvent.objects.bulk_create(
        JobEvent(job=job, kind=EventKind.LOG, level="warning", message=note[:2000])
        for note in collected.refused[:100]
    )


# --- environments ---------------------------------------------------------------
def environment_identity(data: dict, *, image_digest: str = "") -> dict:
    """The parts of a fingerprint that make two results comparable (not timestamps or errors)."""
    host = data.get("host") or {}
    software = data.get("software") or {}
    return {
        "host": {
            k: host.get(k)
            for k in ("hostname", "cpu_model", "cpu_cores", "memory_bytes", "os", "kernel", "arch")
        },
        "gpus": sorted(
            json.dumps(
                {k: g.get(k) for k in ("vendor", "model", "arch", "memory_bytes", "driver")},
                sort_keys=True,
            )
            for g in data.get("gpus") or []
        ),
        "software": {
            k: software.get(k)
            for k in ("rocm_version", "cuda_version", "gpu_driver_version", "torch_version")
        }
        | {"libraries": software.get("libraries") or {}},
        "image_digest": image_digest,
    }


def environment_digest(data: dict, *, image: str = "", image_digest: str = "") -> str:
    """The identity of an Environment row: a hash of everything it stores.

    Two results share a row only when every byte of their fingerprint is the same, so no
    job's row is ever rewritten by another's (jobs/migrations/0005 computes the same hash).
    """
    canonical = json.dumps(
        {"data": data, "image": image, "image_digest": image_digest},
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def record_environment(data: dict, *, image: str = "", image_digest: str = "") -> Environment:
    """The row of exactly this fingerprint: made the first time it is seen, never changed.

    ``fingerprint`` (the comparable parts, environment_identity) is shared by every row of one
    machine and stack, which is what results are compared by.
    """
    image, image_digest = image[:300], image_digest[:100]
    identity = environment_identity(data, image_digest=image_digest)
    fingerprint = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()
    gpus = data.get("gpus") or []
    first = gpus[0] if gpus else {}
    software = data.get("software") or {}
    env, _ = Environment.objects.get_or_create(
        data_sha256=environment_digest(data, image=image, image_digest=image_digest),
        defaults={
            "fingerprint": fingerprint,
            "data": data,
            "hostname": str((data.get("host") or {}).get("hostname") or "")[:255],
            "cpu_model": str((data.get("host") or {}).get("cpu_model") or "")[:255],
            "gpu_vendor": str(first.get("vendor") or "")[:32],
            "gpu_model": str(first.get("model") or "")[:255],
            "gpu_arch": str(first.get("arch") or "")[:64],
            "gpu_count": len(gpus),
            "gpu_driver": str(software.get("gpu_driver_version") or first.get("driver") or "")[
                :128
            ],
            "rocm_version": str(software.get("rocm_version") or "")[:64],
            "cuda_version": str(software.get("cuda_version") or "")[:64],
            "image": image,
            "image_digest": image_digest,
        },
    )
    return env


# --- recovery ---------------------------------------------------------------------
def reap_stuck_jobs() -> list[int]:
    """End jobs nobody is going to finish, each with the reason it was given up on."""
    now = timezone.now()
    reaped: list[int] = []
    running_grace = timedelta(seconds=settings.ROCPATH_RUNNING_GRACE_S)
    for job in Job.objects.filter(status=JobStatus.RUNNING, heartbeat_at__lt=now - running_grace):
        if job.fail_to_run(
            f"worker lost: no heartbeat from {job.worker or 'its worker'} since "
            f"{job.heartbeat_at:%Y-%m-%d %H:%M:%S} UTC (reaped after "
            f"{settings.ROCPATH_RUNNING_GRACE_S} s)"
        ):
            reaped.append(job.pk)
    queued_grace = timedelta(seconds=settings.ROCPATH_QUEUED_GRACE_S)
    for job in Job.objects.filter(status=JobStatus.QUEUED, queued_at__lt=now - queued_grace):
        if job.fail_to_run(
            f"no worker picked the job up within {settings.ROCPATH_QUEUED_GRACE_S} s "
            f"(queue {queue_for(job)!r}: is a worker listening on it?)"
        ):
            _revoke(job.task_id)
            reaped.append(job.pk)
    for job in Job.objects.filter(status=JobStatus.PENDING, created_at__lt=now - queued_grace):
        if job.fail_to_run("the job was never handed to the queue (enqueue failed)"):
            reaped.append(job.pk)
    if reaped:
        logger.warning("reaped stuck jobs: %s", reaped)
    return reaped


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


def recover_worker_jobs(worker: str) -> list[int]:
    """A worker starting under a name ends the jobs its previous life left running."""
    ended = []
    for job in Job.objects.filter(status=JobStatus.RUNNING, worker=worker):
        if job.fail_to_run(f"worker lost: {worker} restarted while the job was running"):
            ended.append(job.pk)
    return ended


def events_after(job: Job, cursor: int, limit: int = 500) -> list[JobEvent]:
    return list(JobEvent.objects.filter(job=job, id__gt=cursor).order_by("id")[:limit])
