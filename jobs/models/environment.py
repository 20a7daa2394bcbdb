"""A fingerprint of the hardware and software a job ran on.

A row is written once and never changed: it is identified by the hash of all it stores
(``data_sha256``), so two jobs share a row only when their fingerprints are identical, and
one team's job can never rewrite the row another team's job points at. ``fingerprint`` is
the hash of the comparable parts alone (jobs.services.environment_identity): rows of the
same machine and stack share it, which is what lets results be compared like for like.
"""

from django.db import models
from django.utils import timezone


class Environment(models.Model):
    data_sha256 = models.CharField(max_length=64, unique=True)
    fingerprint = models.CharField(max_length=64, db_index=True)
    data = models.JSONField()
    hostname = models.CharField(max_length=255, blank=True)
    cpu_model = models.CharField(max_length=255, blank=True)
    gpu_vendor = models.CharField(max_length=32, blank=True)
    gpu_model = models.CharField(max_length=255, blank=True)
    gpu_arch = models.CharField(max_length=64, blank=True)
    gpu_count = models.PositiveIntegerField(default=0)
    gpu_driver = models.CharField(max_length=128, blank=True)
    rocm_version = models.CharField(max_length=64, blank=True)
    cuda_version = models.CharField(max_length=64, blank=True)
    image = models.CharField(max_length=300, blank=True)
    image_digest = models.CharField(max_length=100, blank=True)
    first_seen_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-first_seen_at", "-id"]

    def __str__(self) -> str:
        gpu = f"{self.gpu_count}x {self.gpu_model}" if self.gpu_count else "no GPU"
        return f"{self.hostname} ({gpu})"
