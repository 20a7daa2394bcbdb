"""The exit criteria of the four phases, each a named function over stored results.

A criterion answers from data only: ``passed`` or ``failed`` when the data it reads
exists, ``unavailable`` ("not available yet") when rocpath does not yet record what it
would need (no kind serves that task, or the model that holds it is absent), and
``not_needed`` when it does not apply to this project. Never ``passed`` for lack of
data: a gate with an unavailable criterion stays shut unless a person overrides it,
with a reason (roadmap.models.GateOverride). An unavailable criterion starts counting
by itself once its data exists: the kinds are looked up by the task they serve, and
the models by name.

Each function takes a ``Facts`` (the project's data, read once per page) and returns a
``Verdict``; ``CRITERIA`` lists them by phase, with the rationale and what each reads: the
built-in table (``BUILT_IN``) and those a kind declares (``Kind.gate_criteria``, a
``stack.kinds.base.GateCheck`` run by ``DECLARABLE``), so a kind adds its criterion to a
gate without an edit here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cached_property, partial
from typing import Any

from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from jobs.choices import JobStatus, LaunchType
from jobs.models import Job
from roadmap.models import ChecklistAnswer
from roadmap.plan import kinds_serving
from stack.inference.sweep import slo_point_of
from stack.kinds import KINDS, RoadmapTask, blas_bench, compile_check, hipify_scan
from stack.kinds.base import GateCheck
from teams.porting import NEEDS_DECISION, api_groups_with_decisions, decisions_of, lacking_refs

PASSED, FAILED, UNAVAILABLE, NOT_NEEDED = "passed", "failed", "unavailable", "not_needed"
OPEN = (PASSED, NOT_NEEDED)  # what lets a gate open without an override
# The kinds of finding that are an API HIP lacks: each group of them needs a decision.


@dataclass(frozen=True)
class Link:
    label: str
    url: str


@dataclass(frozen=True)
class Verdict:
    status: str
    detail: str
    evidence: tuple[Link, ...] = ()
    fix: Link | None = None


@dataclass(frozen=True)
class Criterion:
    name: str
    phase: int
    title: str
    rationale: str
    reads: str
    check: Callable[[Facts], Verdict]


def _job_link(job: Job, label: str | None = None) -> Link:
    return Link(
        label or f"job {job.pk} ({job.kind}, {job.status})",
        reverse("portal:job-detail", args=[job.pk]),
    )


@dataclass
class Facts:
    """What the criteria read of one project, each read at most once."""

    project: Any
    now: Any = field(default_factory=timezone.now)

    @cached_property
    def source(self) -> Any | None:
        from teams.sources import newest_ready

        return newest_ready(self.project)

    @cached_property
    def ended_jobs(self) -> list[Job]:
        """The project's succeeded and failed jobs, newest first (one query)."""
        return list(
            Job.objects.filter(
                project=self.project, status__in=[JobStatus.SUCCEEDED, JobStatus.FAILED]
            )
            .select_related("environment")
            .order_by("-finished_at", "-id")
        )

    def newest(
        self, kind: str, *, source_current: bool = False, succeeded: bool = True
    ) -> Job | None:
        for job in self.ended_jobs:
            if job.kind != kind or (succeeded and job.status != JobStatus.SUCCEEDED):
                continue
            if source_current and (self.source is None or job.source_id != self.source.pk):
                continue
            return job
        return None

    def of_kinds(self, kinds: list[str]) -> list[Job]:
        return [j for j in self.ended_jobs if j.kind in kinds and j.status == JobStatus.SUCCEEDED]

    @cached_property
    def scan(self) -> Job | None:
        return self.newest(hipify_scan.KIND.name, source_current=True)

    @cached_property
    def unsupported_in_code(self) -> int | None:
        """References in the project's own code to APIs HIP lacks: unsupported, removed and
        device functions HIP lacks (``__shfl_down_sync``), vendored files left out, as the
        effort estimate counts them. Counting the "unsupported" kind alone said "0
        unsupported references" of a tree whose only gap was a device function."""
        return None if self.scan is None else lacking_refs(self.scan.summary or {})["total"]

    @cached_property
    def api_groups(self) -> tuple[list[dict[str, Any]], dict[str, Any]] | None:
        """The current scan's API groups HIP lacks, each with the team's decision, and the
        tally (decided / open); None for a scan from before API groups were recorded."""
        groups = (self.scan.summary or {}).get("api_groups") if self.scan else None
        if groups is None:
            return None
        lacking = [g for g in groups if g.get("kind") in NEEDS_DECISION]
        return api_groups_with_decisions(lacking, decisions_of(self.project))

    @cached_property
    def checklist(self) -> dict[str, ChecklistAnswer]:
        return {a.question: a for a in ChecklistAnswer.objects.filter(project=self.project)}

    @cached_property
    def lacking(self) -> list[dict[str, Any]]:
        """The APIs HIP lacks that the project's own code uses: api, kind, in_code and the
        team's decision (its label, or None while open). From the current scan's API
        groups; for a scan from before them, its most used identifiers, none decided."""
        if self.api_groups is not None:
            return [
                {"api": g["api"], "kind": g["kind"], "in_code": g.get("in_code", 0),
                 "decision": (g["decision"] or {}).get("label")}
                for g in self.api_groups[0]
                if g["state"] != "not_needed"
            ]  # fmt: skip
        top = (self.scan.summary or {}).get("top_apis", []) if self.scan else []
        return [
            {"api": a.get("identifier", ""), "kind": a.get("kind"), "in_code": a["in_code"],
             "decision": None}
            for a in top
            if a.get("kind") in NEEDS_DECISION and a.get("in_code")
        ]  # fmt: skip

    @cached_property
    def benchmark_sides(self) -> dict[str, Job]:
        """The newest succeeded blas-bench job of the current GPU (any vendor but AMD) and
        of an AMD candidate, where each exists."""
        sides: dict[str, Job] = {}
        for job in self.of_kinds([blas_bench.KIND.name]):
            env = job.environment
            if env is None or not env.gpu_vendor or not env.gpu_model:
                continue
            side = "candidate" if env.gpu_vendor.lower() == "amd" else "current"
            sides.setdefault(side, job)
        return sides

    @cached_property
    def serving_jobs(self) -> list[Job]:
        """The project's succeeded jobs whose summary carries a serving sweep
        (``summary["serving"]``, stack/inference/sweep.py), newest first."""
        return [
            j
            for j in self.ended_jobs
            if j.status == JobStatus.SUCCEEDED
            and isinstance((j.summary or {}).get("serving"), dict)
        ]

    @cached_property
    def libraries_comparison(self) -> Verdict:
        return _compare_libraries(self)

    @cached_property
    def checklist_rows(self) -> list:
        """The checklist as it stands (roadmap.checklist.evaluate): the gate, the
        recommendation and the report read it once between them."""
        from roadmap.checklist import evaluate

        return evaluate(self)

    @cached_property
    def performance(self) -> dict | None:
        """The performance table and its summary (roadmap.recommend.performance_ratio),
        read once for the recommendation and the report."""
        from roadmap.recommend import performance_ratio

        return performance_ratio(self)

    def stale_days(self, job: Job) -> int | None:
        """How many days old a job is when past ROCPATH_EVIDENCE_MAX_AGE_DAYS, else None."""
        age = (self.now - (job.finished_at or job.created_at)).days
        return age if age > settings.ROCPATH_EVIDENCE_MAX_AGE_DAYS else None

    @cached_property
    def multi_gpu(self) -> bool:
        """The project targets more than one GPU per job (its target list, or a GPU count)."""
        context = getattr(self.project, "decision_context", None)
        return bool(getattr(context, "multi_gpu", False))


def _submit_fix(label: str) -> Link:
    return Link(label, reverse("portal:job-submit"))


def scan_of_current_code(f: Facts) -> Verdict:
    if f.source is None:
        return Verdict(
            FAILED,
            "The project has no ready source: upload an archive or give a git URL.",
            fix=Link("Add a source", reverse("portal:project-detail", args=[f.project.pk])),
        )
    if f.scan is None:
        return Verdict(
            FAILED,
            f"No succeeded HIPIFY scan of the newest source ({f.source.pk}).",
            fix=Link("Run the scan", reverse("portal:project-detail", args=[f.project.pk])),
        )
    return Verdict(
        PASSED,
        f"Scan {f.scan.pk} of source {f.source.pk}: {f.unsupported_in_code} references in "
        "code to APIs HIP lacks.",
        (_job_link(f.scan),),
    )


def unsupported_apis_decided(f: Facts) -> Verdict:
    if f.scan is None:
        return Verdict(FAILED, "No scan of the current code to read unsupported APIs from.")
    if f.api_groups is None:
        if f.unsupported_in_code == 0:
            return Verdict(
                PASSED, "The current scan finds no API HIP lacks in code.", (_job_link(f.scan),)
            )
        return Verdict(
            UNAVAILABLE,
            "This scan is from before API groups were recorded: scan again to decide them.",
            (_job_link(f.scan),),
            fix=Link("Run the scan", reverse("portal:project-detail", args=[f.project.pk])),
        )
    _, tally = f.api_groups
    decided, undecided = tally["decided"], tally["open"]
    if decided + undecided == 0:
        return Verdict(
            PASSED,
            "The current scan finds no API HIP lacks in the project's own code.",
            (_job_link(f.scan),),
        )
    status = PASSED if undecided == 0 else FAILED
    return Verdict(
        status,
        f"{decided} API groups HIP lacks decided, {undecided} open "
        f"({f.unsupported_in_code} references in code).",
        (_job_link(f.scan),),
        fix=None
        if status == PASSED
        else Link("Decide them", reverse("portal:project-porting", args=[f.project.pk])),
    )


def libraries_compared(f: Facts) -> Verdict:
    """Two GPU models measured on at least one case in common (like for like).

    Read once per Facts: the checklist's performance question asks it too."""
    return f.libraries_comparison


def _compare_libraries(f: Facts) -> Verdict:
    """The current GPU (not AMD) and an AMD candidate, each's newest blas-bench within
    ROCPATH_EVIDENCE_MAX_AGE_DAYS, measured on throughput cases in common: two NVIDIA
    models, a year-old run or bandwidth rows alone open no gate."""
    sides = f.benchmark_sides
    jobs = f.of_kinds([blas_bench.KIND.name])
    if len(sides) < 2:
        have = ", ".join(f"{side}: {job.environment.gpu_model}" for side, job in sides.items())
        return Verdict(
            FAILED,
            "Math-library benchmarks of the current GPU and an AMD candidate are both needed; "
            f"measured: {have or 'none'}.",
            tuple(_job_link(j) for j in jobs[:3]),
            fix=_submit_fix("Run blas-bench on the other GPU"),
        )
    links = tuple(
        _job_link(job, f"{job.environment.gpu_model}: job {job.pk}") for job in sides.values()
    )
    for side, job in sides.items():
        if (age := f.stale_days(job)) is not None:
            return Verdict(
                FAILED,
                f"The {side} GPU's newest benchmark (job {job.pk}) is {age} days old, older "
                f"than {settings.ROCPATH_EVIDENCE_MAX_AGE_DAYS} "
                "(ROCPATH_EVIDENCE_MAX_AGE_DAYS): run it again.",
                links,
                fix=_submit_fix("Run blas-bench again"),
            )
    from jobs.models import Measurement
    from results.services import case_key

    cases = {
        side: {
            (m.benchmark, case_key(m.case))
            for m in Measurement.objects.filter(job=job, metric="throughput").only(
                "benchmark", "case"
            )
        }
        for side, job in sides.items()
    }
    common = cases["current"] & cases["candidate"]
    cur, cand = sides["current"].environment.gpu_model, sides["candidate"].environment.gpu_model
    if not common:
        return Verdict(
            FAILED,
            f"{cur} and {cand} share no throughput case (bandwidth, time or power rows do "
            "not compare compute): run the same GEMM params on both.",
            links,
            fix=_submit_fix("Run the same blas-bench params"),
        )
    return Verdict(
        PASSED, f"{cur} and {cand} measured on {len(common)} throughput cases in common.", links
    )


def checklist_complete(f: Facts) -> Verdict:
    from roadmap.checklist import NO

    rows = f.checklist_rows
    missing = [r.title for r in rows if r.answer is None]
    noes = [f"{r.title}: no ({r.source}{_quoted(r)})" for r in rows if r.answer == NO]
    if not missing and not noes:
        return Verdict(PASSED, f"All {len(rows)} questions answered (from data where it exists).")
    parts = []
    if missing:
        parts.append(f"{len(missing)} checklist question(s) unanswered: {', '.join(missing)}")
    if noes:
        parts.append("answered no: " + "; ".join(noes))
    return Verdict(
        FAILED,
        ". ".join(parts) + ".",
        fix=Link(
            "Answer the checklist" if missing else "Review the checklist",
            reverse("portal:project-roadmap", args=[f.project.pk]) + "#checklist",
        ),
    )


def _quoted(row: Any) -> str:
    """The team's note, or the data's evidence, quoted short."""
    text = (row.note if row.source == "team" else row.evidence).strip()
    if not text:
        return ""
    return ': "' + (text if len(text) <= 120 else text[:117] + "...") + '"'


def _targets(f: Facts) -> list[str]:
    return f.project.compile_targets()


def compile_passes_every_target(f: Facts) -> Verdict:
    job = f.newest(compile_check.KIND.name, source_current=True, succeeded=False)
    if job is None:
        return Verdict(
            FAILED,
            f"No compile check of the current code for {', '.join(_targets(f))}.",
            fix=Link(
                "Run the compile check", reverse("portal:project-detail", args=[f.project.pk])
            ),
        )
    per_target = (job.summary or {}).get("per_target", {})
    failing = [
        t
        for t in _targets(f)
        if t not in per_target or per_target[t].get("failed") or not per_target[t].get("passed")
    ]
    if failing:
        return Verdict(
            FAILED,
            f"Compile check {job.pk}: does not pass for {', '.join(failing)}.",
            (_job_link(job),),
        )
    return Verdict(
        PASSED, f"Compile check {job.pk} passes for {', '.join(_targets(f))}.", (_job_link(job),)
    )


def unsupported_zero_or_decided(f: Facts) -> Verdict:
    if f.scan is None:
        return Verdict(FAILED, "No scan of the current code.")
    verdict = unsupported_apis_decided(f)
    if verdict.status == UNAVAILABLE:
        return Verdict(
            FAILED,
            f"{f.unsupported_in_code} references in code to APIs HIP lacks, and the scan is "
            "too old to decide them by API group.",
            (_job_link(f.scan),),
        )
    return verdict


def converted_code_builds_in_image(f: Facts) -> Verdict:
    job = f.newest(compile_check.KIND.name, source_current=True)
    if job is None:
        return Verdict(FAILED, "No passing compile check of the current code.")
    if job.executor != "docker" or not job.image:
        return Verdict(
            FAILED,
            f"Compile check {job.pk} ran on the host, not in the team's image: run it with the "
            "docker executor (make images).",
            (_job_link(job),),
        )
    digest = f" ({job.image_digest[:19]})" if job.image_digest else ""
    return Verdict(PASSED, f"Built in {job.image}{digest} by job {job.pk}.", (_job_link(job),))


def _served(task: str, what: str, f: Facts) -> tuple[list[str], list[Job]] | Verdict:
    kinds = [k.name for k in kinds_serving(task)]
    if not kinds:
        return Verdict(UNAVAILABLE, f"No job kind of this rocpath {what} yet.")
    return kinds, f.of_kinds(kinds)


def profile_exists(f: Facts) -> Verdict:
    served = _served(RoadmapTask.FIND_BOTTLENECKS, "profiles", f)
    if isinstance(served, Verdict):
        return served
    kinds, jobs = served
    if not jobs:
        return Verdict(
            FAILED,
            f"No succeeded {' / '.join(kinds)} job.",
            fix=_submit_fix("Profile the main workload"),
        )
    return Verdict(PASSED, f"Profile job {jobs[0].pk}.", (_job_link(jobs[0]),))


def tuned_within_10_percent(f: Facts) -> Verdict:
    served = _served(RoadmapTask.TUNE_KERNELS, "tunes GEMMs", f)
    if isinstance(served, Verdict):
        return served
    kinds, jobs = served
    if not jobs:
        return Verdict(
            FAILED, f"No succeeded {' / '.join(kinds)} job.", fix=_submit_fix("Tune the GEMMs")
        )
    summary = jobs[0].summary or {}
    gap = summary.get("gap_to_best_pct")
    if gap is None:
        why = summary.get("why_not") or "the tuning job did not report its gap to the best"
        return Verdict(FAILED, f"Tuning job {jobs[0].pk}: {why}.", (_job_link(jobs[0]),))
    status = PASSED if gap <= 10 else FAILED
    return Verdict(
        status, f"Tuned GEMMs within {gap:.1f} % of the best measured.", (_job_link(jobs[0]),)
    )


def collectives_measured(f: Facts) -> Verdict:
    if not f.multi_gpu:
        return Verdict(NOT_NEEDED, "The project targets one GPU per job.")
    served = _served(RoadmapTask.MULTI_GPU, "measures collectives", f)
    if isinstance(served, Verdict):
        return served
    kinds, jobs = served
    if not jobs:
        return Verdict(
            FAILED, f"No succeeded {' / '.join(kinds)} job.", fix=_submit_fix("Measure collectives")
        )
    return Verdict(PASSED, f"Collectives measured by job {jobs[0].pk}.", (_job_link(jobs[0]),))


def nightly_green(f: Facts) -> Verdict:
    days = settings.ROCPATH_GATE_GREEN_DAYS
    since = f.now - timedelta(days=days)
    scheduled = [
        j
        for j in Job.objects.filter(
            project=f.project, launch_type=LaunchType.SCHEDULED, created_at__gte=since
        ).order_by("created_at")
    ]
    if not scheduled:
        return Verdict(
            FAILED,
            f"No scheduled job in the last {days} days.",
            fix=Link("Create a schedule", reverse("portal:schedule-new")),
        )
    bad = [j for j in scheduled if j.status != JobStatus.SUCCEEDED]
    green_days = {j.created_at.date() for j in scheduled if j.status == JobStatus.SUCCEEDED}
    if bad:
        return Verdict(
            FAILED,
            f"{len(bad)} of {len(scheduled)} scheduled jobs in the last {days} days "
            "did not succeed.",
            tuple(_job_link(j) for j in bad[:3]),
        )
    if len(green_days) < days:
        return Verdict(
            FAILED,
            f"Scheduled jobs green on {len(green_days)} of the last {days} days; "
            "every day is needed.",
            (_job_link(scheduled[-1]),),
        )
    return Verdict(
        PASSED,
        f"Green every day for {days} days ({len(scheduled)} scheduled jobs).",
        (_job_link(scheduled[-1]),),
    )


def baseline_set(f: Facts) -> Verdict:
    from results.models import Baseline

    baselines = list(Baseline.objects.filter(project=f.project).select_related("job")[:5])
    if not baselines:
        return Verdict(
            FAILED,
            "No baseline pinned for this project.",
            fix=Link("Pin a baseline on a job page", reverse("portal:dashboard")),
        )
    return Verdict(
        PASSED,
        f"{len(baselines)} baseline(s): "
        + ", ".join(f"{b.benchmark} (job {b.job_id})" for b in baselines),
        tuple(_job_link(b.job) for b in baselines[:3]),
    )


def alert_channel_tested(f: Facts) -> Verdict:
    from results.alert_models import AlertSettings, Delivery, DeliveryStatus

    alerts_page = Link("Set up alerts", reverse("portal:project-alerts", args=[f.project.pk]))
    configured = AlertSettings.objects.filter(project=f.project).first()
    if configured is None or not configured.targets():
        return Verdict(
            FAILED, "No alert channel (webhook or e-mail) is configured.", fix=alerts_page
        )
    # Only a delivery to a channel configured now counts: replacing a webhook URL or the
    # recipients resets the criterion until the new channel has been reached once.
    delivered = (
        Delivery.objects.filter(
            alert__project=f.project,
            status=DeliveryStatus.DELIVERED,
            target__in=configured.targets(),
        )
        .order_by("-delivered_at")
        .first()
    )
    if delivered is None:
        return Verdict(
            FAILED,
            "A channel is configured, but nothing was delivered to it yet (deliveries to "
            "channels since replaced do not count): send a test.",
            fix=alerts_page,
        )
    return Verdict(
        PASSED,
        f"Alert delivered by {delivered.channel} at {delivered.delivered_at:%Y-%m-%d %H:%M} UTC.",
        (alerts_page,),
    )


def metrics_scraped(f: Facts) -> Verdict:
    from results.models import MetricsScrape

    seen = MetricsScrape.objects.filter(pk=1).first()
    if seen is None:
        return Verdict(
            FAILED,
            "/metrics was never scraped: set ROCPATH_METRICS_TOKEN or ROCPATH_METRICS_ALLOW "
            "and point Prometheus at it (docs/metrics.md).",
        )
    # /metrics is the deployment's, not one project's: what a gate can ask is that
    # monitoring sees the service now, not that it once did.
    age = f.now - seen.at
    if age > timedelta(days=1):
        return Verdict(
            FAILED,
            f"/metrics was last scraped {age.days} day(s) ago ({seen.at:%Y-%m-%d %H:%M} UTC): "
            "monitoring no longer sees the service.",
        )
    return Verdict(PASSED, f"/metrics last scraped at {seen.at:%Y-%m-%d %H:%M} UTC.")


def slo_points(serving: dict[str, Any]) -> dict[str, dict[str, Any] | None]:
    """Each mode's SLO point of a serving sweep (``summary["serving"]``): the step that
    serves most per GPU while meeting the SLO; None for a mode where no step met it."""
    return {str(c.get("mode")): slo_point_of(c) for c in serving.get("curves") or []}


def _goodput(point: dict[str, Any] | None) -> float | None:
    value = (point or {}).get("goodput_per_gpu")
    return float(value) if isinstance(value, int | float) else None


def serving_goodput_near_baseline(
    f: Facts, *, kinds: tuple[str, ...], within_pct: float
) -> Verdict:
    """The newest succeeded serving sweep of the declaring kinds against the project's
    pinned baseline job of those kinds on the same machine (the baseline's scope), mode by
    mode: the SLO point's goodput per GPU at most ``within_pct`` below the baseline's.
    A mode is compared only where both curves were swept on the same load (concurrency or
    rate) and each was held to an SLO of its own (offline keeps only the TPOT bound, so a
    team SLO of TTFT/E2EL bounds alone leaves it none): the others are said and skipped,
    and with no mode left the gate is not yet met.

    A project that never ran one of those kinds does not serve LLMs here: not needed. Once
    it did, every missing piece (a sweep, an SLO, a baseline, a point meeting the SLO) is a
    "not yet" that names what to run or pin."""
    from results.models import Baseline

    named = " / ".join(kinds)
    sweep_fix = _submit_fix(f"Run {named} with a sweep and an SLO")
    if not any(j.kind in kinds for j in f.ended_jobs):
        return Verdict(
            NOT_NEEDED,
            f"The project ran no {named} job: serving is measured against its baseline once "
            "it does.",
        )
    job = next((j for j in f.serving_jobs if j.kind in kinds), None)
    if job is None:
        return Verdict(
            FAILED,
            f"Not yet: no succeeded {named} job recorded a serving sweep (params sweep, and "
            "an SLO: slo_ttft_ms, slo_tpot_ms or slo_e2el_ms).",
            fix=sweep_fix,
        )
    serving = job.summary["serving"]
    link = _job_link(job)
    if not serving.get("slo"):
        return Verdict(
            FAILED,
            f"Not yet: job {job.pk} set no SLO, so it counted no goodput: run the sweep with "
            "the team's latency bounds.",
            (link,),
            fix=sweep_fix,
        )
    fingerprint = job.environment.fingerprint if job.environment else None
    pinned = list(
        Baseline.objects.filter(project=f.project, job__kind__in=kinds).select_related("job")
    )
    baseline = next((b for b in pinned if b.fingerprint == fingerprint), None)
    if baseline is None:
        where = (
            f" ({len(pinned)} pinned on other machines: goodput per GPU compares on one)"
            if pinned
            else ""
        )
        return Verdict(
            FAILED,
            f"Not yet: no {named} baseline pinned on job {job.pk}'s machine{where}.",
            (link,),
            fix=Link(f"Pin job {job.pk} as the baseline", link.url),
        )
    base_job = baseline.job
    base_link = _job_link(base_job, f"baseline: job {base_job.pk}")
    evidence = (link,) if base_job.pk == job.pk else (link, base_link)
    before = (base_job.summary or {}).get("serving")
    if not isinstance(before, dict) or not before.get("slo"):
        return Verdict(
            FAILED,
            f"Not yet: the baseline, job {base_job.pk}, recorded no serving sweep with an "
            "SLO: pin one that did.",
            evidence,
            fix=Link(f"Pin job {job.pk} as the baseline", link.url),
        )
    unlike = [
        what
        for what, key in (
            ("SLO", "slo"),
            ("SLO attainment", "attainment"),
            ("workload (model, dtype, lengths, requests)", "workload"),
        )
        if serving.get(key) != before.get(key)
    ]
    if unlike:
        return Verdict(
            FAILED,
            f"Job {job.pk} and the baseline, job {base_job.pk}, differ in {', '.join(unlike)}: "
            "goodput compares only at one SLO on one workload. Run the sweep with the "
            "baseline's, or pin a new baseline.",
            evidence,
            fix=sweep_fix,
        )
    now, then = slo_points(serving), slo_points(before)
    modes = [m for m in now if m in then]
    if not modes:
        return Verdict(
            FAILED,
            f"Job {job.pk} swept {', '.join(now) or 'no mode'}, the baseline "
            f"{', '.join(then) or 'no mode'}: no mode in common.",
            evidence,
            fix=sweep_fix,
        )
    curves_now = {str(c.get("mode")): c for c in serving.get("curves") or []}
    curves_then = {str(c.get("mode")): c for c in before.get("curves") or []}
    said, short, compared, unbound, other_load = [], [], [], [], []
    for mode in modes:
        mine, theirs = curves_now[mode], curves_then[mode]
        if mine.get("load") != theirs.get("load"):
            # a rate sweep's steps are not a concurrency sweep's: their SLO points differ
            other_load.append(theirs.get("load"))
            said.append(
                f"{mode}: not compared: job {job.pk} swept {mine.get('load')}, the baseline "
                f"{theirs.get('load')} (goodput compares on one kind of load)"
            )
            continue
        # a curve keeps only the bounds that apply to it (offline: TPOT only); held to
        # none, it counted no goodput at any step: there is nothing to compare
        bare = [
            who
            for who, curve in (
                (f"job {job.pk}", mine),
                (f"the baseline, job {base_job.pk}", theirs),
            )
            if not curve.get("slo")
        ]
        if bare:
            unbound.append(mode)
            where = "" if len(bare) == 2 or base_job.pk == job.pk else f" in {bare[0]}"
            why = " (offline keeps only the TPOT bound)" if mode == "offline" else ""
            said.append(f"{mode}: held to no bound{where}{why}")
            continue
        compared.append(mode)
        new, old = _goodput(now[mode]), _goodput(then[mode])
        if old is None or old <= 0:
            short.append(mode)
            said.append(
                f"{mode}: the baseline met the SLO at no load it tried"
                if then[mode] is None
                else f"{mode}: the baseline counted no goodput at its SLO point"
            )
        elif new is None or new <= 0:
            short.append(mode)
            first = (
                "no step met the SLO"
                if now[mode] is None
                else f"job {job.pk} counted no goodput at its SLO point"
            )
            said.append(f"{mode}: {first} (the baseline: {old:.3g} req/s per GPU)")
        else:
            below = (1 - new / old) * 100
            if below > within_pct:
                short.append(mode)
            said.append(
                f"{mode}: {new:.3g} against the baseline's {old:.3g} req/s per GPU at the SLO "
                + (
                    "(level with it)"
                    if abs(below) < 0.05
                    else f"({below:.1f} % below)"
                    if below > 0
                    else f"({-below:.1f} % above)"
                )
            )
    if not compared:
        if unbound:
            what = "no mode with an SLO in common"
            fix = _submit_fix(
                f"Run {named} with a bound every swept mode keeps (slo_tpot_ms: offline keeps "
                "only that one)"
            )
        else:
            what = "no mode swept on the same kind of load"
            fix = _submit_fix(f"Run {named} sweeping {' / '.join(map(str, other_load))}")
        return Verdict(
            FAILED,
            f"Not yet: job {job.pk} against the baseline, job {base_job.pk}: {what} ("
            + "; ".join(said)
            + ").",
            evidence,
            fix=fix,
        )
    detail = "; ".join(said) + f". The bar: at most {within_pct:g} % below, in every mode compared."
    if short:
        return Verdict(
            FAILED,
            f"Job {job.pk} against the baseline, job {base_job.pk}: " + detail,
            evidence,
            fix=Link(f"Find what slowed job {job.pk}", link.url),
        )
    return Verdict(
        PASSED, f"Job {job.pk} against the baseline, job {base_job.pk}: " + detail, evidence
    )


@dataclass(frozen=True)
class DeclarableCheck:
    """What the roadmap runs for a GateCheck a kind declares: its criterion's name and
    words ({within_pct} filled from the declaration) and the check itself, which takes
    the declaring kinds and the bound beside the facts."""

    name: str
    title: str
    rationale: str
    reads: str
    check: Callable[..., Verdict]


DECLARABLE: dict[str, DeclarableCheck] = {
    GateCheck.SERVING_GOODPUT_NEAR_BASELINE: DeclarableCheck(
        "serving_goodput_near_baseline",
        "Serving goodput at the SLO within {within_pct:g} % of the baseline",
        "A serving stack ships when it still serves at the team's latency SLO what the "
        "pinned baseline did; a drop past the bar is a regression to find first.",
        "the newest succeeded serving sweep of {kinds}: each mode's SLO point's goodput per "
        "GPU; the project's pinned baseline of {kinds} on the same machine",
        serving_goodput_near_baseline,
    ),
}


def declared_criteria() -> tuple[Criterion, ...]:
    """The criteria the kinds declare (``Kind.gate_criteria``), one per GateCheck: the
    kinds that declare a check are the kinds it reads. Two kinds that declare one check
    in different phases or bounds are an error at start-up, not a gate that depends on
    which kind registered first."""
    found: dict[str, list[tuple[str, Any]]] = {}
    for kind in KINDS.values():
        for declared in kind.gate_criteria:
            found.setdefault(declared.check, []).append((kind.name, declared))
    out = []
    for check, declarations in found.items():
        bounds = {(d.phase, d.within_pct) for _, d in declarations}
        if len(bounds) > 1:
            raise ValueError(f"kinds declare {check} with different phases or bounds: {bounds}")
        (phase, within_pct), kinds = bounds.pop(), tuple(name for name, _ in declarations)
        spec = DECLARABLE[check]
        out.append(
            Criterion(
                spec.name,
                phase,
                spec.title.format(within_pct=within_pct),
                spec.rationale,
                spec.reads.format(kinds=" / ".join(kinds)),
                partial(spec.check, kinds=kinds, within_pct=within_pct),
            )
        )
    return tuple(out)


BUILT_IN: tuple[Criterion, ...] = (
    Criterion(
        "scan_of_current_code",
        1,
        "A HIPIFY scan of the current code exists",
        "Porting effort is estimated from the code as it is now, not as it was.",
        "the newest ready source; the newest succeeded hipify-scan of it",
        scan_of_current_code,
    ),
    Criterion(
        "unsupported_apis_decided",
        1,
        "Every unsupported API has a recorded decision",
        "An API HIP lacks is work nobody planned until someone decides what to do with it.",
        "the current scan's unsupported APIs; the project's per-API decisions",
        unsupported_apis_decided,
    ),
    Criterion(
        "libraries_compared",
        1,
        "Math libraries measured on the current and a candidate GPU, like for like",
        "A purchase is decided on the same cases measured on both GPUs.",
        "succeeded blas-bench jobs, their environments' GPU models, the cases they share",
        libraries_compared,
    ),
    Criterion(
        "checklist_complete",
        1,
        "The decision checklist is complete, and no answer is no",
        "The recommendation weighs every question: an unanswered one leaves it undecidable, "
        "a no weighs against the move, so phase 1 does not end on one.",
        "the checklist: pre-filled answers from data, the team's answers (they count)",
        checklist_complete,
    ),
    Criterion(
        "compile_passes_every_target",
        2,
        "The compile check passes for every target architecture",
        "Code that does not compile for a target GPU cannot run on it.",
        "the newest compile check of the current code; the project's target architectures",
        compile_passes_every_target,
    ),
    Criterion(
        "unsupported_zero_or_decided",
        2,
        "Unsupported references in code are 0 or all decided",
        "Porting is done when nothing unsupported is left undecided.",
        "the current scan; per-API decisions",
        unsupported_zero_or_decided,
    ),
    Criterion(
        "converted_code_builds_in_image",
        2,
        "The converted code builds in the team's image",
        "The build that passes must be the one that ships: in the image, not on a laptop.",
        "the newest passing compile check: its executor and image digest",
        converted_code_builds_in_image,
    ),
    Criterion(
        "profile_exists",
        3,
        "A profile of the main workload exists",
        "Tuning without a profile tunes the wrong kernel.",
        "succeeded jobs of the kinds that find bottlenecks",
        profile_exists,
    ),
    Criterion(
        "tuned_within_10_percent",
        3,
        "Tuned GEMMs are within 10 % of the best measured",
        "Untuned GEMMs leave much of the GPU unused; 10 % is the bar, or the job says why not.",
        "succeeded jobs of the kinds that tune kernels: their gap to the best",
        tuned_within_10_percent,
    ),
    Criterion(
        "collectives_measured",
        3,
        "Collectives measured (projects on more than one GPU)",
        "Multi-GPU scaling is bounded by the interconnect; measure it before relying on it.",
        "the project's GPU count; succeeded jobs of the kinds that measure collectives",
        collectives_measured,
    ),
    Criterion(
        "nightly_green",
        4,
        "A nightly schedule has run green for N days",
        "Production needs evidence that the stack stays working, day after day.",
        "scheduled jobs of the project over the last ROCPATH_GATE_GREEN_DAYS days",
        nightly_green,
    ),
    Criterion(
        "baseline_set",
        4,
        "A performance baseline is set",
        "A regression can only be seen against a baseline.",
        "the project's baselines (results)",
        baseline_set,
    ),
    Criterion(
        "alert_channel_tested",
        4,
        "An alert channel is configured and tested",
        "A regression nobody hears of is not caught.",
        "the project's alert deliveries (results)",
        alert_channel_tested,
    ),
    Criterion(
        "metrics_scraped",
        4,
        "Metrics are scraped",
        "Monitoring must see the service before production depends on it.",
        "the time of the last /metrics scrape",
        metrics_scraped,
    ),
)
# Every criterion, the built-in ones and those the kinds declare, each phase's in that order.
CRITERIA: tuple[Criterion, ...] = (*BUILT_IN, *declared_criteria())
if len({c.name for c in CRITERIA}) != len(CRITERIA):
    raise ValueError("a declared criterion takes the name of another")
BY_NAME = {c.name: c for c in CRITERIA}


def for_phase(number: int) -> list[Criterion]:
    return [c for c in CRITERIA if c.phase == number]
