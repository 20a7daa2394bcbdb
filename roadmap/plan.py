"""The four phases and their built-in tasks, and the rows a project's roadmap starts with.

The table is the product's source material: phase lengths in weeks, the tasks of each
phase. Each built-in task is a ``stack.kinds.RoadmapTask`` name, so the kinds that serve
it are found by asking the kinds (``Kind.roadmap_tasks``), never by naming them here:
a kind added later joins its task by itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

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


def kinds_serving(task_key: str) -> list[Kind]:
    """The registered kinds whose jobs do this task's work (none: no job serves it yet)."""
    return [kind for kind in KINDS.values() if task_key in kind.roadmap_tasks]


def ensure_roadmap(project) -> list[Phase]:
    """The project's four phases with their built-in tasks, created on first use.

    Idempotent and safe under two concurrent first views: the unique constraints on
    (project, number) and (phase, key) make the second creator's rows conflict, and
    ``ignore_conflicts`` lets it read the first one's instead.
    """
    existing = list(Phase.objects.filter(project=project).order_by("number"))
    if len(existing) == len(PHASES):
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
            [
                Task(phase=phases[plan.number], key=key, title=title, order=i * 10)
                for plan in PHASES
                for i, (key, title) in enumerate(plan.tasks)
            ],
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
