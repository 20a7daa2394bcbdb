"""What jobs itself does when a job succeeds: register the tuned file a job declared, tell
the source what a scan of it found. One receiver, so the job is read once."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.dispatch import receiver

from jobs.finished import job_finished

if TYPE_CHECKING:
    from jobs.models import Job


@receiver(job_finished, dispatch_uid="jobs.job_succeeded")
def job_succeeded(sender: object, *, job_id: int, status: str, **_: object) -> None:
    from jobs.choices import JobStatus
    from jobs.models import Job
    from jobs.services.tuned_files import register_from_job

    if status != JobStatus.SUCCEEDED:
        return
    job = Job.objects.filter(pk=job_id).first()
    if job is None:
        return
    register_from_job(job)  # a result that declares ``summary.tuned_file``
    record_scan_of_source(job)


def record_scan_of_source(job: Job) -> None:
    """A succeeded HIPIFY scan of a source tells the source how many CUDA references it has."""
    from stack.kinds import hipify_scan
    from teams.sources import record_cuda_refs

    if job.kind == hipify_scan.KIND.name and job.source_id is not None:
        totals = (job.summary or {}).get("totals") or {}
        record_cuda_refs(job.source_id, int(totals.get("cuda_refs") or 0))
