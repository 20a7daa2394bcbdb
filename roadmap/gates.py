"""A project's roadmap as the pages and the API show it: phases, tasks, gates, status.

A gate opens when each of its phase's criteria passed (or does not apply), or was
overridden by a person with a reason. The phase's status follows from the gates: done
once its gate is open, active once the gate before it is open (phase 1 from the start),
not started otherwise — unless a person marked it blocked. Tasks with a key take their
state from the jobs of the kinds that serve them; the team's own tasks from a person.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from jobs.choices import JobStatus
from roadmap.criteria import OPEN, UNAVAILABLE, Criterion, Facts, Verdict, for_phase
from roadmap.models import GateOverride, Phase, PhaseStatus
from roadmap.plan import PLANS, ensure_roadmap, kinds_serving
from stack.kinds import RoadmapTask


@dataclass(frozen=True)
class CriterionState:
    criterion: Criterion
    verdict: Verdict
    override: GateOverride | None

    @property
    def open(self) -> bool:
        return self.verdict.status in OPEN or self.override is not None


@dataclass(frozen=True)
class TaskState:
    task: Any
    kinds: list[str]
    state: str  # "done", "running", "failed", "todo", "no kind yet"
    job: Any | None


@dataclass
class PhaseState:
    phase: Phase
    title: str
    criteria: list[CriterionState] = field(default_factory=list)
    tasks: list[TaskState] = field(default_factory=list)
    status: str = PhaseStatus.NOT_STARTED

    @property
    def gate_open(self) -> bool:
        return all(c.open for c in self.criteria)

    @property
    def missing(self) -> list[CriterionState]:
        return [c for c in self.criteria if not c.open]


# The exit criteria that say a task's work is done. A task without one is done when a job
# of a kind serving it succeeded; with one, only when the criterion holds now: a scan of
# last month's code, or a benchmark of one GPU, is not the task done.
TASK_CRITERIA: dict[str, tuple[str, ...]] = {
    RoadmapTask.ASSESS_PORTING: ("scan_of_current_code",),
    RoadmapTask.BENCHMARK_LIBRARIES: ("libraries_compared",),
    RoadmapTask.PORT_KERNELS: ("compile_passes_every_target", "unsupported_zero_or_decided"),
    RoadmapTask.DEV_ENVIRONMENT: ("converted_code_builds_in_image",),
    RoadmapTask.FIND_BOTTLENECKS: ("profile_exists",),
    RoadmapTask.TUNE_KERNELS: ("tuned_within_10_percent",),
    RoadmapTask.MULTI_GPU: ("collectives_measured",),
    RoadmapTask.MONITORING: ("alert_channel_tested", "metrics_scraped"),
    RoadmapTask.BASELINE: ("baseline_set",),
}


def _task_state(
    task: Any, facts: Facts, jobs_by_kind: dict[str, list], verdicts: dict[str, Verdict]
) -> TaskState:
    if not task.key:
        return TaskState(task, [], "done" if task.done_at else "todo", None)
    kinds = [k.name for k in kinds_serving(task.key)]
    if not kinds:
        return TaskState(task, [], "done" if task.done_at else "no kind yet", None)
    jobs = sorted(
        (j for k in kinds for j in jobs_by_kind.get(k, [])),
        key=lambda j: (j.created_at, j.pk),
        reverse=True,
    )
    if not jobs:
        return TaskState(task, kinds, "todo", None)
    names = [n for n in TASK_CRITERIA.get(str(task.key), ()) if n in verdicts]
    if names:
        newest = jobs[0]
        if all(verdicts[n].status in OPEN for n in names):
            done = next((j for j in jobs if j.status == JobStatus.SUCCEEDED), newest)
            return TaskState(task, kinds, "done", done)
        if newest.status in (JobStatus.PENDING, JobStatus.QUEUED, JobStatus.RUNNING):
            return TaskState(task, kinds, "running", newest)
        if newest.status != JobStatus.SUCCEEDED:
            return TaskState(task, kinds, "failed", newest)
        return TaskState(task, kinds, "todo", newest)
    if any(j.status == JobStatus.SUCCEEDED for j in jobs):
        return TaskState(
            task, kinds, "done", next(j for j in jobs if j.status == JobStatus.SUCCEEDED)
        )
    newest = jobs[0]
    if newest.status in (JobStatus.PENDING, JobStatus.QUEUED, JobStatus.RUNNING):
        return TaskState(task, kinds, "running", newest)
    return TaskState(task, kinds, "failed", newest)


def roadmap_state(project: Any, facts: Facts | None = None) -> list[PhaseState]:
    """Every phase with its criteria, tasks and derived status (a bounded number of queries).

    ``facts``: the project's data already read (the report reads it once for the gates,
    the checklist and the recommendation).
    """
    from jobs.models import Job

    phases = ensure_roadmap(project)
    facts = facts or Facts(project)
    overrides: dict[tuple[int, str], GateOverride] = {}
    now = timezone.now()
    for o in GateOverride.objects.filter(
        # One from before overrides expired lasts the default from when it was made.
        Q(expires_at__isnull=True, at__gt=now - timedelta(days=OVERRIDE_DAYS_DEFAULT))
        | Q(expires_at__gt=now),
        phase__project=project,
        revoked_at__isnull=True,
    ).select_related("by"):
        overrides.setdefault((o.phase_id, o.criterion), o)
    jobs_by_kind: dict[str, list] = {}
    for job in Job.objects.filter(project=project).only("id", "kind", "status", "created_at"):
        jobs_by_kind.setdefault(job.kind, []).append(job)
    tasks_by_phase: dict[int, list] = {}
    from roadmap.models import Task

    for task in Task.objects.filter(phase__project=project):
        tasks_by_phase.setdefault(task.phase_id, []).append(task)

    states = []
    previous_open = True
    for phase in phases:
        state = PhaseState(phase, PLANS[phase.number].title)
        for criterion in for_phase(phase.number):
            verdict = criterion.check(facts)
            state.criteria.append(
                CriterionState(criterion, verdict, overrides.get((phase.pk, criterion.name)))
            )
        verdicts = {c.criterion.name: c.verdict for c in state.criteria}
        state.tasks = [
            _task_state(t, facts, jobs_by_kind, verdicts) for t in tasks_by_phase.get(phase.pk, [])
        ]
        if phase.status == PhaseStatus.BLOCKED:
            state.status = PhaseStatus.BLOCKED
        elif previous_open and state.gate_open:
            state.status = PhaseStatus.DONE
        elif previous_open:
            state.status = PhaseStatus.ACTIVE
        else:
            state.status = PhaseStatus.NOT_STARTED
        _record_dates(phase, state.status)
        previous_open = previous_open and state.gate_open and phase.status != PhaseStatus.BLOCKED
        states.append(state)
    return states


def _record_dates(phase: Phase, status: str) -> None:
    """The actual start and end follow the status both ways: written when the phase is
    first seen active / done, the end cleared when its gate closes again, both cleared
    when the gate before it closes (the phase has not started after all)."""
    today = timezone.localdate()
    fields = {}
    if status in (PhaseStatus.ACTIVE, PhaseStatus.DONE) and phase.actual_start is None:
        fields["actual_start"] = today
    if status == PhaseStatus.DONE and phase.actual_end is None:
        fields["actual_end"] = today
    if status == PhaseStatus.ACTIVE and phase.actual_end is not None:
        fields["actual_end"] = None  # a gate that closed again (new code, a failed check)
    if status == PhaseStatus.NOT_STARTED:
        fields.update(
            {name: None for name in ("actual_start", "actual_end") if getattr(phase, name)}
        )
    if fields:
        Phase.objects.filter(pk=phase.pk).update(**fields)
        for k, v in fields.items():
            setattr(phase, k, v)


class OverrideError(ValueError):
    """An override that cannot be recorded (no reason, unknown criterion)."""


OVERRIDE_DAYS_DEFAULT, OVERRIDE_DAYS_MAX = 30, 90
REASON_MIN_CHARS, REASON_MIN_WORDS = 20, 4


class NotAllowed(OverrideError):
    """The act is a team admin's or the phase owner's (a 403)."""


def _may_override(phase: Phase, user: Any) -> bool:
    from teams.access import is_admin

    if phase.owner_id is not None and phase.owner_id == getattr(user, "pk", None):
        return True
    return is_admin(user, phase.project.team_id)


def override_gate(
    phase: Phase, criterion: str, reason: str, user: Any, *, days: int = OVERRIDE_DAYS_DEFAULT
) -> GateOverride:
    """Open one failing criterion of a gate by hand, for ``days``: recorded with who, when,
    why and until when. A team admin's or the phase owner's act; never on a criterion that
    passes (there is nothing to open), never without a reason a reader can weigh."""
    found = {c.name: c for c in for_phase(phase.number)}
    if criterion not in found:
        raise OverrideError(
            f"phase {phase.number} has no criterion {criterion!r}; "
            f"it has {', '.join(sorted(found))}"
        )
    if not _may_override(phase, user):
        raise NotAllowed("only an admin of the team or the phase's owner overrides a gate")
    reason = " ".join((reason or "").split())
    words = [w for w in reason.split() if any(ch.isalpha() for ch in w)]
    if len(reason) < REASON_MIN_CHARS or len({w.lower() for w in words}) < REASON_MIN_WORDS:
        raise OverrideError(
            f"an override needs a reason of substance: at least {REASON_MIN_CHARS} "
            f"characters and {REASON_MIN_WORDS} different words saying why the data is not "
            "needed or not yet there"
        )
    if not 1 <= days <= OVERRIDE_DAYS_MAX:
        raise OverrideError(f"an override lasts 1 to {OVERRIDE_DAYS_MAX} days, not {days}")
    verdict = found[criterion].check(Facts(phase.project))
    if verdict.status in OPEN:
        raise OverrideError(
            f"{criterion} is {verdict.status} ({verdict.detail}): there is nothing to override"
        )
    now = timezone.now()
    with transaction.atomic():
        GateOverride.objects.filter(
            phase=phase, criterion=criterion, revoked_at__isnull=True
        ).update(revoked_at=now, revoked_by=user)
        return GateOverride.objects.create(
            phase=phase,
            criterion=criterion,
            reason=reason,
            by=user,
            at=now,
            expires_at=now + timedelta(days=days),
        )


def revoke_override(override: GateOverride, user: Any) -> None:
    """End an override before its expiry: its author, a team admin or the phase owner."""
    if override.by_id != getattr(user, "pk", None) and not _may_override(override.phase, user):
        raise NotAllowed(
            "only the override's author, an admin of the team or the phase's owner revokes it"
        )
    if override.revoked_at is None:
        GateOverride.objects.filter(pk=override.pk, revoked_at__isnull=True).update(
            revoked_at=timezone.now(), revoked_by=user
        )
    override.refresh_from_db()


def unavailable(states: list[PhaseState]) -> list[CriterionState]:
    return [c for s in states for c in s.criteria if c.verdict.status == UNAVAILABLE]
