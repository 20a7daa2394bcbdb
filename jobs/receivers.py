"""What jobs itself does when a job ends: register the tuned file a job declared."""

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
