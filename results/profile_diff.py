"""Two profile jobs compared kernel by kernel, as the results layer compares them.

The diff itself is stack.profile.diff (plain Python, so it runs on a device too); here it
reads jobs as stored (summary and Measurement rows) and takes its intervals from
results.stats.ratio_interval, the same bootstrap every other comparison of results uses.
``regression_note`` is what a regression check calls to say which kernel a profile
regression is in.
"""

from __future__ import annotations

from typing import Any

from jobs.models import Job
from results.stats import ratio_interval
from stack.profile.diff import ProfileDiff, diff_profiles, explain_regression


def profile_document(job: Job) -> dict[str, Any]:
    """A profile job as the diff reads it: its summary and its measurements."""
    rows = [
        {
            "benchmark": m.benchmark,
            "case": m.case,
            "metric": m.metric,
            "value": m.value,
            "samples": m.samples,
        }
        for m in job.measurements.all()
    ]
    return {"summary": job.summary or {}, "measurements": rows}


def diff_jobs(baseline: Job, current: Job, profiler: str | None = None) -> ProfileDiff:
    """The kernels of two profile jobs, worst change first (DiffError if they do not compare)."""
    return diff_profiles(
        profile_document(baseline),
        profile_document(current),
        profiler=profiler,
        interval=ratio_interval,
    )


def regression_note(baseline: Job, current: Job, profiler: str | None = None) -> str | None:
    """ "the regression is in `…`, +14.0 % …" for two profile jobs, or None when no kernel is
    surely slower."""
    return explain_regression(diff_jobs(baseline, current, profiler))
