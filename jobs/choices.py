"""Job statuses, their groups and the moves allowed between them.

"failed" means the tool ran and reported failure; "errored" means we could
not run it (tool or image missing, timed out, killed, worker lost).
"""

from django.db import models


class JobStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    ERRORED = "errored", "Errored"
    CANCELED = "canceled", "Canceled"


ACTIVE_STATUSES = frozenset({JobStatus.PENDING, JobStatus.QUEUED, JobStatus.RUNNING})
TERMINAL_STATUSES = frozenset(
    {JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.ERRORED, JobStatus.CANCELED}
)

TRANSITIONS: dict[str, frozenset[str]] = {
    JobStatus.PENDING: frozenset({JobStatus.QUEUED, JobStatus.CANCELED, JobStatus.ERRORED}),
    # queued → pending: its message could not be sent (the broker is down); the dispatcher
    # queues it again when the broker is back (services.dispatch).
    JobStatus.QUEUED: frozenset(
        {JobStatus.PENDING, JobStatus.RUNNING, JobStatus.CANCELED, JobStatus.ERRORED}
    ),
    # running → queued: its executor failed for a passing reason (ExecutorError with
    # permanent=False) and it is queued again, a bounded number of times (services.run).
    JobStatus.RUNNING: frozenset(
        {
            JobStatus.QUEUED,
            JobStatus.SUCCEEDED,
            JobStatus.FAILED,
            JobStatus.ERRORED,
            JobStatus.CANCELED,
        }
    ),
    JobStatus.SUCCEEDED: frozenset(),
    JobStatus.FAILED: frozenset(),
    JobStatus.ERRORED: frozenset(),
    JobStatus.CANCELED: frozenset(),
}


class LaunchType(models.TextChoices):
    MANUAL = "manual", "Manual (browser)"
    API = "api", "API"
    CLI = "cli", "Command line"
    SCHEDULED = "scheduled", "Scheduled"
    RERUN = "rerun", "Rerun"


class EventKind(models.TextChoices):
    PROGRESS = "progress", "Progress"
    LOG = "log", "Log"
    METRIC = "metric", "Metric"
    STATUS = "status", "Status change"


class Better(models.TextChoices):
    HIGHER = "higher", "Higher is better"
    LOWER = "lower", "Lower is better"
