"""Actions that change jobs, one module per stage of a job's life.

submit (validate, create, enqueue) → cancel → run (claim, execute, stream events) →
ingest (conclude: result.json, artifacts, the final status) → environments (the rows a
result's fingerprint is kept in) → recovery (reap what is stuck) and dispatch (queue what
the broker lost or never had); schedules (fire the due ones through submit); paths says
where a job's files live. The public names
are re-exported here, so that callers write ``services.submit_job(...)``. A test that
replaces a name replaces it where it is looked up: in its module
(``jobs.services.submit.enqueue``), not here.
"""

from jobs.services.cancel import cancel_job, revoke
from jobs.services.dispatch import dispatch_jobs
from jobs.services.environments import environment_digest, environment_identity, record_environment
from jobs.services.ingest import Gathered, conclude, gather, ingest_result
from jobs.services.paths import artifact_dir, artifact_file, cache_dir_for, job_dir
from jobs.services.recovery import (
    cancel_slurm_jobs_of,
    end_lost_run,
    reap_stuck_jobs,
    recover_worker_jobs,
    sweep_containers,
    sweep_slurm_jobs,
)
from jobs.services.run import DatabaseHooks, events_after, execute_job
from jobs.services.schedules import fire_due_schedules, save_schedule, stopped_schedules
from jobs.services.submit import (
    BROKER_DOWN_NOTE,
    RUN_TASK,
    Submission,
    SubmissionError,
    check_submission,
    enqueue,
    image_for,
    queue_for,
    rerun_job,
    submit_job,
    validate_hardware,
    waits_for_broker,
)

__all__ = [
    "BROKER_DOWN_NOTE",
    "RUN_TASK",
    "DatabaseHooks",
    "Gathered",
    "Submission",
    "SubmissionError",
    "artifact_dir",
    "artifact_file",
    "cache_dir_for",
    "cancel_job",
    "cancel_slurm_jobs_of",
    "check_submission",
    "conclude",
    "dispatch_jobs",
    "end_lost_run",
    "enqueue",
    "environment_digest",
    "environment_identity",
    "events_after",
    "execute_job",
    "fire_due_schedules",
    "gather",
    "image_for",
    "ingest_result",
    "job_dir",
    "queue_for",
    "reap_stuck_jobs",
    "record_environment",
    "recover_worker_jobs",
    "rerun_job",
    "revoke",
    "save_schedule",
    "stopped_schedules",
    "submit_job",
    "sweep_containers",
    "sweep_slurm_jobs",
    "validate_hardware",
    "waits_for_broker",
]
