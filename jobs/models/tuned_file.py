"""A tuned GEMM file (TunableOp's results) registered for later jobs, keyed by GPU and stack.

Written once from the job that tuned it (a job whose result declares ``summary.tuned_file``,
jobs.services.tuned_files), never changed: a new tuning is a new row. Whether it still
fits a stack is not stored but asked each time (stack.tune.registry.check against an
environment), since the stack moves under it: a file is "stale" the day PyTorch or ROCm is
upgraded, and is then flagged and never handed to a job.
"""

from django.db import models
from django.utils import timezone


class TunedFile(models.Model):
    team = models.ForeignKey("portal.Team", on_delete=models.CASCADE, related_name="tuned_files")
    project = models.ForeignKey(
        "portal.AdoptionProject",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="tuned_files",
    )
    job = models.OneToOneField(
        "jobs.Job",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="produced_tuned_file",
        help_text="the job that tuned it",
    )
    method = models.CharField(max_length=32)
    backend = models.CharField(max_length=16, blank=True, help_text="cuda or rocm")
    gpu_arch = models.CharField(max_length=64, blank=True, db_index=True)
    gpu_name = models.CharField(max_length=255, blank=True)
    torch_version = models.CharField(max_length=64, blank=True)
    rocm_version = models.CharField(max_length=64, blank=True)
    hipblaslt_version = models.CharField(max_length=64, blank=True)
    rocblas_version = models.CharField(max_length=64, blank=True)
    validators = models.JSONField(default=dict)
    entries = models.PositiveIntegerField(default=0)
    content = models.TextField(help_text="the file itself, as the job wrote it")
    sha256 = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.method} file for {self.gpu_arch or '?'} (torch {self.torch_version or '?'})"
