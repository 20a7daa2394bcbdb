"""What results does when a job ends (jobs.finished.job_finished, sent after commit)."""

from __future__ import annotations

from django.dispatch import receiver

from jobs.finished import job_finished


@receiver(job_finished, dispatch_uid="results.job_finished")
def on_job_finished(sender: object, *, job_id: int, status: str, **_: object) -> None:
    """Compare a finished job with its baseline (filled in by the baselines work)."""
