"""The four phases and their tasks, and the rows a project's roadmap holds.

The table is the product's source material: phase lengths in weeks, the built-in tasks
of each phase. Each built-in task is a ``stack.kinds.RoadmapTask`` name, so the kinds that
serve it are found by asking the kinds (``Kind.roadmap_tasks``), never by naming them here:
a kind added later joins its task by itself. A kind whose work no built-in task covers
declares a task of its own (``Kind.new_roadmap_tasks``); ``planned_tasks`` reads both, and
``ensure_roadmap`` gives every project, old or new, the rows of each.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.db.models import Count, Q

from roadmap.models import Phase, Task
from stack.kinds import KINDS, Kind, RoadmapTask


@dataclass(frozen=True)
class PhasePlan:
    number: int
    title: str
    weeks: tuple[int, int]
    tasks: tuple[tuple[str, str], ...]  # (RoadmapTask name, title)


PHASES: tuple[PhasePlan, ...] = (
    PhasePlan(
        1,
        "Assessment & planning",
        (1, 2),
        (
            (RoadmapTask.ASSESS_PORTING, "Assess porting complexity with HIPIFY"),
            (RoadmapTask.BENCHMARK_LIBRARIES, "Benchmark the ROCm math libraries"),
            (RoadmapTask.HARDWARE_PLAN, "Hardware purchase and deployment plan"),
        ),
    ),
    PhasePlan(
        2,
        "Development & porting",
        (2, 4),
        (
            (RoadmapTask.DEV_ENVIRONMENT, "Set up the ROCm development environment"),
            (RoadmapTask.PORT_KERNELS, "Port the core kernels"),
            (RoadmapTask.MEMORY_ACCESS, "Optimise memory-access patterns"),
        ),
    ),
    PhasePlan(
        3,
        "Performance tuning",
        (2, 3),
        (
            (RoadmapTask.FIND_BOTTLENECKS, "Find bottlenecks with the profiler"),
            (RoadmapTask.TUNE_KERNELS, "Tune kernel parameters and launch configuration"),
            (RoadmapTask.MULTI_GPU, "Optimise multi-GPU communication"),
        ),
    ),
    PhasePlan(
        4,
        "Production deployment",
        (1, 2),
        (
            (RoadmapTask.DEPLOY, "Containerised deployment"),
            (RoadmapTask.MONITORING, "Monitoring and alerting integration"),
            (RoadmapTask.BASELINE, "Establish the performance baseline"),
        ),
    ),
)
PLANS = {p.number: p for p in PHASES}


@dataclass(frozen=True)
class PlannedTask:
    """A task every project's phase has: built-in (PHASES) or declared by a kind."""

    phase: int
    key: str
    title: str
    order: int


def planned_tasks() -> list[PlannedTask]:
    """Every phase's keyed tasks: the built-in table's, then those the kinds declare
    (``Kind.new_roadmap_tasks``, in registry order), numbered on within their phase.

    A key two kinds declare alike is one task both serve; declared differently, or a
    built-in key again, it is an error at start-up, not a task that moves between phases.
    """
    rows = [(plan.number, key, title) for plan in PHASES for key, title in plan.tasks]
    seen = {key: (number, title) for number, key, title in rows}
    for kind in KINDS.values():
        for task in kind.new_roadmap_tasks:
            if task.key not in seen:
                seen[task.key] = (task.phase, task.title)
                rows.append((task.phase, task.key, task.title))
            elif seen[task.key] != (task.phase, task.title):
                raise ValueError(
                    f"kind {kind.name} declares roadmap task {task.key!r} as phase "
                    f"{task.phase} {task.title!r}; it is already phase {seen[task.key][0]} "
                    f"{seen[task.key][1]!r}"
                )
    placed: dict[int, int] = {}
    planned = []
    for number, key, title in sorted(rows, key=lambda row: row[0]):  # stable: table first
        planned.append(PlannedTask(number, key, title, placed.get(number, 0) * 10))
        placed[number] = placed.get(number, 0) + 1
    return planned


def kinds_serving(task_key: str) -> list[Kind]:
    """The registered kinds whose jobs do this task's work (none: no job serves it yet)."""
    return [kind for kind in KINDS.values() if kind.serves(task_key)]


def ensure_roadmap(project) -> list[Phase]:
    """The project's four phases with every planned task (built-in and declared), created
    on first use and topped up when a kind declares a task later.

    One query when nothing is missing: the phases, each counting its tasks whose key is
    planned for it. A project made before a kind declared its task falls short by one
    and gets it here, so no data migration per kind is needed. Idempotent and safe under
    two concurrent first views: the unique constraints on (project, number) and
    (phase, key) make the second creator's rows conflict, and ``ignore_conflicts`` lets
    it read the first one's instead.
    """
    tasks = planned_tasks()
    keys: dict[int, list[str]] = {}
    for task in tasks:
        keys.setdefault(task.phase, []).append(task.key)
    planned_here = Q()
    for number, names in keys.items():
        planned_here |= Q(number=number, tasks__key__in=names)
    existing = list(
        Phase.objects.filter(project=project)
        .annotate(planned=Count("tasks", filter=planned_here))
        .order_by("number")
    )
    if len(existing) == len(PHASES) and all(
        p.planned == len(keys.get(p.number, ())) for p in existing
    ):
        return existing
    with transaction.atomic():
        Phase.objects.bulk_create(
            [
                Phase(
                    project=project,
                    number=plan.number,
                    planned_days_min=plan.weeks[0] * 7,
                    planned_days_max=plan.weeks[1] * 7,
                )
                for plan in PHASES
            ],
            ignore_conflicts=True,
        )
        phases = {p.number: p for p in Phase.objects.filter(project=project)}
        Task.objects.bulk_create(
            [Task(phase=phases[t.phase], key=t.key, title=t.title, order=t.order) for t in tasks],
            ignore_conflicts=True,
        )
    return [phases[n] for n in sorted(phases)]


def current_phases(project_ids: list[int]) -> dict[int, int | None]:
    """Each project's current phase, from the dates the gates wrote (one query): the
    highest phase started and not done; 5 when all four are done; None when the roadmap
    was never opened."""
    found: dict[int, int | None] = dict.fromkeys(project_ids)
    done: dict[int, set[int]] = {}
    for project_id, number, start, end in Phase.objects.filter(
        project_id__in=project_ids
    ).values_list("project_id", "number", "actual_start", "actual_end"):
        if end is not None:
            done.setdefault(project_id, set()).add(number)
        elif start is not None:
            found[project_id] = max(found[project_id] or 0, number)
    for project_id, numbers in done.items():
        if found[project_id] is None:
            found[project_id] = 5 if numbers >= {1, 2, 3, 4} else max(numbers) + 1
    return found
