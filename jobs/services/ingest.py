"""Conclude: what a job left (result.json, artifacts) and how it ended, made its final state.

Not named conclude.py: the package re-exports the function ``conclude``, and a submodule
of the same name would be shadowed by it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import mimetypes
import shutil
import signal
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, transaction

from jobs.choices import EventKind, JobStatus
from jobs.executors.base import JobSpec, Outcome
from jobs.models import Artifact, Job, JobEvent, Measurement
from jobs.outputs import Collected, Refused, collect_artifacts, read_result
from jobs.services.environments import record_environment
from jobs.services.paths import artifact_dir
from jobs.storage import DiskFull
from stack import contract

if TYPE_CHECKING:
    from jobs.services.run import DatabaseHooks

logger = logging.getLogger(__name__)
# The database went away (a restart, a dropped connection): not the job's fault and not
# the end of it. These propagate to the task, which tries again once the database may be
# back (jobs.tasks.run_job); any other exception ends the job errored with its cause.
DATABASE_ERRORS = (OperationalError, InterfaceError)


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
    if outcome.oom_killed or outcome.signal is not None or outcome.limit_exceeded or outcome.lost:
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
        exited = f"runner exited with code {outcome.exit_code} without writing result.json"
        said = _runner_said(outcome.stderr_tail)
        # The runner's own reason (a full out folder, naming what filled it) leads: the
        # missing result.json is its consequence, not its cause.
        return None, (f"{said} ({exited})" if said else exited) + (f"\n{tail}" if tail else "")
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


def _runner_said(stderr_tail: list[str]) -> str:
    """Why the runner wrote no result.json, when it said so as its last line (stack.cli)."""
    lines = [line for line in stderr_tail if line.strip()]
    if lines and lines[-1].startswith(contract.RUNNER_SAID_PREFIX):
        return lines[-1][len(contract.RUNNER_SAID_PREFIX) :].strip()
    return ""


def conclude(job: Job, spec: JobSpec, outcome: Outcome, hooks: DatabaseHooks | None = None) -> str:
    """Turn the executor's outcome and result.json into the job's final state.

    The out folder is read first, outside the transaction (gather). Then one
    transaction: the last log lines, the measurements, the artifacts and the final
    status commit together (and a job that something else ended meanwhile keeps that
    ending: its row no longer says running, so nothing is added). The job's out/ is
    removed afterwards: what it produced lives on as the copies in artifact_dir().
    """
    pending = list(hooks.pending) if hooks else []
    try:
        gathered = gather(job, spec, outcome)
        with transaction.atomic():
            progress = hooks.close(update_progress=False) if hooks else None
            verdict = _conclude(job, spec, outcome, progress, gathered)
    except DATABASE_ERRORS:
        raise
    except Exception as exc:  # whatever it was, the job must end, saying so
        verdict = _could_not_store(job, exc, pending)
    finally:
        with contextlib.suppress(OSError):
            shutil.rmtree(spec.out_dir, ignore_errors=True)
    if not Artifact.objects.filter(job_id=job.pk).exists():
        shutil.rmtree(artifact_dir(job.pk), ignore_errors=True)  # copied for nothing, or partly
    return verdict


def _could_not_store(job: Job, exc: Exception, pending: list[JobEvent]) -> str:
    """End the job errored with the exception that stopped its conclude.

    Whatever it was (a value PostgreSQL refuses, a full disk, a MemoryError), the conclude
    transaction has rolled back by now; this one is new. Left running, the job would be
    reaped later as "worker lost: no heartbeat", the wrong cause. The log lines that were
    buffered for the failed transaction are written again, so the job's log keeps its end.
    """
    logger.exception("job %s: could not store the result", job.pk)
    reason = f"could not store the result: {_cause(exc)}"
    shutil.rmtree(artifact_dir(job.pk), ignore_errors=True)  # no row references these now
    with transaction.atomic():
        job.refresh_from_db()  # what the failed transaction moved it to was rolled back
        if job.status != JobStatus.RUNNING:
            return f"ended elsewhere: {job.status}"
        for event in pending:
            event.pk = None
        JobEvent.objects.bulk_create(pending)
        JobEvent.objects.create(job=job, kind=EventKind.LOG, level="error", message=reason)
        if not job.fail_to_run(reason):
            return f"ended elsewhere: {Job.objects.get(pk=job.pk).status}"
    return "errored: could not store the result"


def _cause(exc: BaseException) -> str:
    """The exception as one line of the job's error: a full disk names its path and room."""
    if isinstance(exc, DiskFull):
        return str(exc)
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}"[:2000] if text else type(exc).__name__


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
    if outcome.lost:
        job.finish(
            JobStatus.ERRORED,
            exit_code=outcome.exit_code,
            error=outcome.lost + (f"\n{tail}" if tail else ""),
            progress=progress,
        )
        return "errored: lost by its scheduler"
    if outcome.oom_killed:
        job.finish(
            JobStatus.ERRORED,
            exit_code=outcome.exit_code,
            error=f"out of memory: the job went over its {outcome.memory_limit_mb} MiB memory "
            "limit and the kernel killed it" + (f"\n{tail}" if tail else ""),
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
    rows = Measurement.objects.bulk_create(
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
    if len(rows) >= settings.ROCPATH_ANALYZE_AFTER_ROWS and connection.vendor == "postgresql":
        transaction.on_commit(analyze_measurements)
    _register_artifacts(job, collected, declared=result.get("artifacts", []))
    return status


def analyze_measurements() -> None:
    """Refresh the planner's statistics of the measurements table after a bulk ingest: a
    history query planned on a table never analysed since thousands of rows came ran 617 s
    (issue 39). Autovacuum gets there too, but only after its own delay."""
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {connection.ops.quote_name(Measurement._meta.db_table)}")


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
