"""What jobs itself does when a job ends: register the tuned file a job declared, tell the
source what a scan of it found."""

from __future__ import annotations

from django.dispatch import receiver

from jobs.finished import job_finished


@receiver(job_finished, dispatch_uid="jobs.register_tuned_file")
def register_tuned_file(sender: object, *, job_id: int, status: str, **_: object) -> None:
    """A succeeded job whose result declares ``summary.tuned_file`` gets it registered."""
    from jobs.choices import JobStatus
    from jobs.models import Job
    from jobs.services.tuned_files import register_from_job

    if status != JobStatus.SUCCEEDED:
        return
    job = Job.objects.filter(pk=job_id).first()
    if job is not None:
        register_from_job(job)


@receiver(job_finished, dispatch_uid="jobs.record_scan_of_source")
def record_scan_of_source(sender: object, *, job_id: int, status: str, **_: object) -> None:
    """A succeeded HIPIFY scan of a source tells the source how many CUDA references it has."""
    from jobs.choices import JobStatus
    from jobs.models import Job
    from stack.kinds import hipify_scan
    from teams.sources import record_cuda_refs

    if status != JobStatus.SUCCEEDED:
        return
    job = Job.objects.filter(pk=job_id, kind=hipify_scan.KIND.name).first()
    if job is not None and job.source_id is not None:
        totals = (job.summary or {}).get("totals") or {}
        record_cuda_refs(job.source_id, int(totals.get("cuda_refs") or 0))
