"""One measured value: what comparisons, baselines and regression checks read."""

from django.db import models
from django.utils import timezone

from jobs.choices import Better


class Measurement(models.Model):
    job = models.ForeignKey("jobs.Job", on_delete=models.CASCADE, related_name="measurements")
    environment = models.ForeignKey(
        "jobs.Environment",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="measurements",
    )
    benchmark = models.CharField(max_length=128)
    case = models.JSONField(default=dict, blank=True)
    metric = models.CharField(max_length=128)
    unit = models.CharField(max_length=32)
    value = models.FloatField()
    samples = models.JSONField(default=list, blank=True)
    better = models.CharField(max_length=8, choices=Better.choices)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["benchmark", "metric"], name="measurement_bench_metric"),
            # One case's history on one environment (results.compare.history).
            models.Index(
                fields=["environment", "benchmark", "metric", "case"], name="measurement_env_case"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.benchmark}/{self.metric} = {self.value} {self.unit}"
