"""A job's measurements on its page (a page of rows at a time) and as downloads.

The page never loads the samples: a sweep's samples are most of its bytes, and the
table shows only how many there were (counted by the database). The downloads hold
every measurement: CSV with one column per case parameter (for a spreadsheet, the
samples counted), JSON with the samples themselves, streamed so a large job is never
held in memory whole.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator

from django.db.models import QuerySet
from django.http import HttpResponse, StreamingHttpResponse

from jobs.models import Job, Measurement
from jobs.models.measurement import SampleCount
from stack.textsafe import csv_row

PER_PAGE = 50
CSV_COLUMNS = ("benchmark", "metric", "unit", "value", "better", "samples")


def without_samples(job: Job) -> QuerySet[Measurement]:
    """The job's measurements in order, each with ``n_samples`` and not its samples."""
    return job.measurements.defer("samples").annotate(n_samples=SampleCount("samples"))


def _filename(job: Job, ext: str) -> str:
    return f"job-{job.pk}-measurements.{ext}"


def csv_response(job: Job) -> HttpResponse:
    """Every measurement of the job as CSV: the fixed columns, then ``case.<key>`` for each
    case parameter any measurement has (empty where a family lacks it)."""
    rows = list(
        without_samples(job).values_list(
            "benchmark", "metric", "unit", "value", "better", "n_samples", "case"
        )
    )
    keys = sorted({key for *_, case in rows if isinstance(case, dict) for key in case})
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(csv_row([*CSV_COLUMNS, *(f"case.{key}" for key in keys)]))
    for *fixed, case in rows:
        case = case if isinstance(case, dict) else {}
        writer.writerow(csv_row([*fixed, *(case.get(key, "") for key in keys)]))
    response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{_filename(job, "csv")}"'
    return response


def _json_chunks(job: Job) -> Iterator[str]:
    yield f'{{"job": {job.pk}, "kind": {json.dumps(job.kind)}, "measurements": ['
    fields = ("benchmark", "case", "metric", "unit", "value", "better", "samples")
    rows = job.measurements.values(*fields).iterator(chunk_size=1000)
    for i, row in enumerate(rows):
        yield ("," if i else "") + json.dumps(row)
    yield "]}"


def json_response(job: Job) -> StreamingHttpResponse:
    """Every measurement of the job, samples included, as one JSON document."""
    response = StreamingHttpResponse(_json_chunks(job), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="{_filename(job, "json")}"'
    return response
