"""Baselines and comparisons: the actions that change results' rows.

A baseline pins one job as the reference of a scope: project + benchmark + environment
identity (``jobs.Environment.fingerprint``). A job that ends succeeded in a scope with a
baseline is compared case by case with it (``compare_job``), one Verdict per case and
metric that both jobs measured with raw samples; a single number has no spread to
judge a change against, so it is not compared at all rather than compared badly.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

from django.db import transaction
from django.db.models import Case, Count, QuerySet, Subquery, Value, When
from django.utils import timezone

from jobs.choices import Better, JobStatus
from jobs.models import Job, Measurement
from results.detect import CaseRuns, Decision, judge
from results.models import Baseline, Verdict, VerdictKind
from results.signals import announce_regressions
from teams.access import AnyUser, team_ids

# How many earlier runs of a scope tell its run-to-run noise (Conbench looks back 100;
# 30 keep the query small and still give the spread to a few per cent).
HISTORY_RUNS = 30


class BaselineError(ValueError):
    """A job that cannot be pinned; ``field`` names what is wrong (for a 400)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.errors = {field: [message]}


def case_key(case: dict[str, Any]) -> str:
    """The identity of a case: its parameters as canonical JSON, hashed."""
    canonical = json.dumps(case or {}, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def benchmarks_of(job: Job) -> list[str]:
    return sorted(set(job.measurements.values_list("benchmark", flat=True)))


def pin_baseline(
    job: Job, *, user: AnyUser | None = None, benchmark: str = "", note: str = ""
) -> list[Baseline]:
    """Make ``job`` the baseline of its scope, for one benchmark or all it measured.

    A scope has one baseline; pinning another job replaces it (the verdicts already
    written keep the baseline job they were measured against).
    """
    if job.status != JobStatus.SUCCEEDED:
        raise BaselineError(
            "job", f"job {job.pk} is {job.status}: only a succeeded job can be a baseline"
        )
    if job.project_id is None:
        raise BaselineError("job", f"job {job.pk} belongs to no project: a baseline is per project")
    if job.environment_id is None:
        raise BaselineError(
            "job", f"job {job.pk} reported no environment: a baseline is per environment"
        )
    measured = benchmarks_of(job)
    if benchmark and benchmark not in measured:
        raise BaselineError("benchmark", f"job {job.pk} has no measurements of {benchmark!r}")
    wanted = [benchmark] if benchmark else measured
    if not wanted:
        raise BaselineError("job", f"job {job.pk} has no measurements to compare against")
    fingerprint = job.environment.fingerprint
    pinned = []
    with transaction.atomic():
        for name in wanted:
            baseline, _ = Baseline.objects.update_or_create(
                project_id=job.project_id,
                benchmark=name,
                fingerprint=fingerprint,
                defaults={
                    "job": job,
                    "note": note[:500],
                    "created_by": user if user and user.is_authenticated else None,
                    "created_at": timezone.now(),
                },
            )
            pinned.append(baseline)
    return pinned


def unpin_baseline(baseline: Baseline) -> None:
    baseline.delete()


def baselines_for(user: AnyUser) -> QuerySet[Baseline]:
    """The baselines of the user's teams' projects."""
    return Baseline.objects.filter(project__team_id__in=team_ids(user)).select_related(
        "project", "job"
    )


def baselines_in_scope(job: Job) -> QuerySet[Baseline]:
    """The baselines the job is (or would be) compared with: its project and environment."""
    if job.project_id is None or job.environment_id is None:
        return Baseline.objects.none()
    return Baseline.objects.filter(
        project_id=job.project_id, fingerprint=job.environment.fingerprint
    ).select_related("job")


def has_baseline_in_scope(job_id: int) -> bool:
    """Whether any baseline (not the job itself) shares the job's project and environment.

    One query, run on every job that ends: this is all the conclude path pays when no
    baseline applies (docs/benchmarks.md measured it).
    """
    job = Job.objects.filter(pk=job_id)
    return (
        Baseline.objects.filter(
            project_id=Subquery(job.values("project_id")[:1]),
            fingerprint=Subquery(job.values("environment__fingerprint")[:1]),
        )
        .exclude(job_id=job_id)
        .exists()
    )


def compare_job(job_id: int) -> list[Verdict]:
    """Compare a succeeded job with the baselines of its scope and store the verdicts.

    Idempotent: a job already compared with a baseline job keeps its verdicts (and their
    acknowledgements); one compared with an earlier baseline of the scope has those
    verdicts replaced. The database's one-verdict-per-case constraint makes two
    concurrent comparisons of one job write one set.
    """
    job = Job.objects.select_related("environment").filter(pk=job_id).first()
    if (
        job is None
        or job.status != JobStatus.SUCCEEDED
        or job.project_id is None
        or job.environment is None
    ):
        return []
    baselines = (
        Baseline.objects.filter(
            project_id=job.project_id,
            fingerprint=job.environment.fingerprint,
            benchmark__in=benchmarks_of(job),
        )
        .exclude(job_id=job.pk)
        .order_by("benchmark")
    )
    written: list[Verdict] = []
    for baseline in baselines:
        written += _compare_with(job, baseline)
    return written


def _sampled(job_id: int, benchmark: str) -> dict[tuple[str, str], Measurement]:
    rows = Measurement.objects.filter(job_id=job_id, benchmark=benchmark).only(
        "case", "metric", "unit", "value", "samples", "better"
    )
    return {(case_key(m.case), m.metric): m for m in rows if len(m.samples or []) >= 2}


def _history(job: Job, baseline: Baseline) -> dict[tuple[str, str], dict[int, float]]:
    """Each case's values ({job id: value}) in the scope's last HISTORY_RUNS succeeded
    jobs before this one, the baseline's excluded (its samples stand for it).

    What tells a scope's run-to-run noise (results.detect.judge); the job being judged is
    never among them.
    """
    earlier = (
        Job.objects.filter(
            project_id=job.project_id,
            environment__fingerprint=baseline.fingerprint,
            status=JobStatus.SUCCEEDED,
            pk__lt=job.pk,
        )
        .exclude(pk=baseline.job_id)
        .order_by("-pk")
        .values_list("pk", flat=True)[:HISTORY_RUNS]
    )
    found: dict[tuple[str, str], dict[int, float]] = {}
    rows = Measurement.objects.filter(
        job_id__in=list(earlier), benchmark=baseline.benchmark
    ).values_list("job_id", "case", "metric", "value")
    for job_id, case, metric, value in sorted(rows, key=lambda r: r[0]):
        found.setdefault((case_key(case), metric), {})[job_id] = value
    return found


def _json_safe(detail: dict[str, Any]) -> dict[str, Any]:
    """The detail as PostgreSQL's json takes it: a non-finite number (the interval width of
    a case whose throughput fell to 0 is infinite) as None. json.dumps writes "Infinity",
    which PostgreSQL refuses, and the whole job's comparison with it, its regressed
    verdicts and their alert included."""
    return {
        k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in detail.items()
    }


def _compare_with(job: Job, baseline: Baseline) -> list[Verdict]:
    existing = Verdict.objects.filter(job=job, benchmark=baseline.benchmark)
    if existing.filter(baseline_job_id=baseline.job_id).exists():
        return []
    before = _sampled(baseline.job_id, baseline.benchmark)
    history = _history(job, baseline)
    now = timezone.now()
    pairs = {
        key: (before[key], m)
        for key, m in _sampled(job.pk, baseline.benchmark).items()
        if key in before and before[key].unit == m.unit
    }
    decisions: dict[tuple[str, str], Decision] = {}
    for metric in sorted({key[1] for key in pairs}):  # the cases of a metric lend their noise
        decisions.update(
            judge(
                {
                    key: CaseRuns(
                        b.samples,
                        m.samples,
                        history.get(key, {}),
                        higher_is_better=m.better == Better.HIGHER,
                        baseline_value=b.value,
                        current_value=m.value,
                    )
                    for key, (b, m) in pairs.items()
                    if key[1] == metric
                }
            )
        )
    rows = []
    for key, (b, m) in pairs.items():
        d = decisions[key]
        rows.append(
            Verdict(
                job=job,
                baseline=baseline,
                baseline_job_id=baseline.job_id,
                benchmark=baseline.benchmark,
                case=m.case,
                case_key=key[0],
                metric=m.metric,
                unit=m.unit,
                verdict=d.verdict,
                baseline_value=b.value,
                value=m.value,
                ratio=d.ratio.value,
                ratio_low=d.ratio.low,
                ratio_high=d.ratio.high,
                p_value=d.p_value,
                detail=_json_safe({**d.detail, "change": d.change, "better": m.better}),
                created_at=now,
            )
        )
    with transaction.atomic():
        existing.exclude(baseline_job_id=baseline.job_id).delete()  # an earlier baseline's
        Verdict.objects.bulk_create(rows, ignore_conflicts=True)
        # Ours are those stamped now: a concurrent comparison that won a conflict wrote
        # its own stamp, and it announces its own regressions.
        mine = list(Verdict.objects.filter(job=job, benchmark=baseline.benchmark, created_at=now))
        regressed = sorted(v.pk for v in mine if v.verdict == VerdictKind.REGRESSED)
        if regressed:
            announce_regressions(
                project_id=job.project_id,
                job_id=job.pk,
                baseline_job_id=baseline.job_id,
                verdict_ids=regressed,
            )
    return mine


VERDICT_ORDER = [
    VerdictKind.REGRESSED,
    VerdictKind.INCONCLUSIVE,
    VerdictKind.NOISY,
    VerdictKind.IMPROVED,
    VerdictKind.UNCHANGED,
]


def verdicts_of(job: Job) -> QuerySet[Verdict]:
    """A job's verdicts, worst first (regressed, inconclusive, noisy, improved, unchanged)."""
    rank = Case(
        *(When(verdict=v, then=Value(i)) for i, v in enumerate(VERDICT_ORDER)),
        default=Value(len(VERDICT_ORDER)),
    )
    return Verdict.objects.filter(job=job).order_by(rank, "benchmark", "metric", "id")


def verdict_counts(job: Job) -> dict[str, int]:
    """How many verdicts of each kind the job has, in VERDICT_ORDER."""
    found = dict(
        Verdict.objects.filter(job=job)
        .values_list("verdict")
        .annotate(n=Count("id"))
        .values_list("verdict", "n")
    )
    return {v.value: found[v.value] for v in VERDICT_ORDER if v.value in found}


def open_regressions(user: AnyUser) -> QuerySet[Verdict]:
    """Regressed verdicts not yet acknowledged, of the user's teams, newest first."""
    return (
        Verdict.objects.filter(
            verdict=VerdictKind.REGRESSED,
            acknowledged_at__isnull=True,
            job__team_id__in=team_ids(user),
        )
        .select_related("job", "job__project")
        .order_by("-created_at", "-id")
    )


def acknowledge(verdicts: QuerySet[Verdict]) -> int:
    """Mark regressions as seen: they leave the dashboard's open list."""
    return verdicts.filter(acknowledged_at__isnull=True).update(acknowledged_at=timezone.now())
