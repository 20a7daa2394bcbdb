"""One measured value: what comparisons, baselines and regression checks read."""

from typing import Any

from django.db import models
from django.utils import timezone

from jobs.choices import Better


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _sorted(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_sorted(item) for item in value]
    return value


class CaseField(models.JSONField):
    """A case's parameters, stored with their keys sorted, in writes and lookups alike.

    Equal cases must compare equal in the database whatever order a runner wrote their
    keys in: comparisons align rows by the case's stored text and history filters on it.
    PostgreSQL's jsonb orders keys itself; SQLite keeps the text it is given (and compares
    JSON(col) = JSON(param) as text), so the embedded defaults need the order fixed here.
    """

    def get_prep_value(self, value: Any) -> Any:
        return super().get_prep_value(_sorted(value))


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
    case = CaseField(default=dict, blank=True)
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


class SampleCount(models.Func):
    """How many raw samples a measurement holds, counted in the database: a page needs the
    count, not the lists. 0 where ``samples`` is not an array (null, or a scalar an old
    result stored).

    One expression per backend, both tested: PostgreSQL's jsonb functions, SQLite's JSON1
    ones (the embedded defaults of `make run`).
    """

    template = (
        "CASE WHEN %(typeof)s(%(expressions)s) = 'array' "
        "THEN %(length)s(%(expressions)s) ELSE 0 END"
    )
    output_field = models.IntegerField()

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return self.as_sql(
            compiler, connection, typeof="jsonb_typeof", length="jsonb_array_length", **extra
        )

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return self.as_sql(
            compiler, connection, typeof="json_type", length="json_array_length", **extra
        )
