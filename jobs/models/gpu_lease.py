"""A GPU of a worker host held by one running job."""

from __future__ import annotations

from django.db import models


class GpuLease(models.Model):
    """One job's hold on one GPU of a host, so that two jobs never share a GPU.

    The unique (host, vendor, index) constraint is the lock: a worker process
    takes a GPU by inserting its row, and two processes of one host (Celery's
    prefork children, or several workers) cannot both succeed. A lease whose job
    has ended is stale and is cleared by the next taker (jobs.leases).
    """

    host = models.CharField(max_length=255)
    vendor = models.CharField(max_length=16)
    index = models.PositiveIntegerField()
    job = models.ForeignKey("jobs.Job", on_delete=models.CASCADE, related_name="gpu_leases")
    acquired_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["host", "vendor", "index"], name="one_job_per_gpu")
        ]

    def __str__(self) -> str:
        return f"{self.vendor} GPU {self.index} of {self.host}: job {self.job_id}"
