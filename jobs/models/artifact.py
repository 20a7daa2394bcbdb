"""A file a job produced, kept under the job's out folder."""

from django.db import models
from django.utils import timezone


class Artifact(models.Model):
    job = models.ForeignKey("jobs.Job", on_delete=models.CASCADE, related_name="artifacts")
    path = models.CharField(max_length=500, help_text="relative to the job's out folder")
    size = models.BigIntegerField()
    sha256 = models.CharField(max_length=64)
    content_type = models.CharField(max_length=200, default="application/octet-stream")
    description = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["path"]
        constraints = [
            models.UniqueConstraint(fields=["job", "path"], name="artifact_unique_job_path")
        ]

    def __str__(self) -> str:
        return self.path

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]
