"""A kind declares a roadmap task or a gate criterion of its own; the roadmap finds both in
the kinds registry. These run on PostgreSQL and, with the page families, on SQLite
(scripts/test.sh --sqlite)."""

from __future__ import annotations

import dataclasses

import pytest

from roadmap import criteria, plan
from roadmap.gates import roadmap_state
from roadmap.models import Task
from roadmap.plan import PHASES, ensure_roadmap, kinds_serving, planned_tasks
from stack.kinds import KINDS
from stack.kinds.base import GateCheck, GateCriterion, Kind, NewRoadmapTask
from stack.kinds.inference_bench import KIND as INFERENCE_BENCH

pytestmark = pytest.mark.django_db

SERVING_TASK = INFERENCE_BENCH.new_roadmap_tasks[0]


def roadmap_before_the_declaration(project, monkeypatch) -> None:
    """The project's roadmap rows as they were made before any kind declared a task: by
    the same ensure_roadmap, over a registry whose kinds declare none."""
    without = {
        name: dataclasses.replace(kind, new_roadmap_tasks=()) for name, kind in KINDS.items()
    }
    with monkeypatch.context() as patch:
        patch.setattr(plan, "KINDS", without)
        ensure_roadmap(project)
    assert not Task.objects.filter(phase__project=project, key=SERVING_TASK.key).exists()


def test_inference_bench_declares_a_phase_three_task_to_benchmark_serving():
    assert (SERVING_TASK.phase, SERVING_TASK.title) == (3, "Benchmark inference serving")
    assert kinds_serving(SERVING_TASK.key) == [INFERENCE_BENCH]
    built_in = sum(len(p.tasks) for p in PHASES)
    assert len(planned_tasks()) == built_in + 1


def test_a_project_made_before_the_declaration_gets_the_task_on_its_next_view(
    project, monkeypatch, django_assert_num_queries
):
    roadmap_before_the_declaration(project, monkeypatch)
    phases = ensure_roadmap(project)
    added = Task.objects.get(phase__project=project, key=SERVING_TASK.key)
    assert added.phase == phases[2] and added.title == SERVING_TASK.title
    # after phase 3's built-in tasks, before the team's own (order 100)
    assert added.order == 10 * len(PHASES[2].tasks)
    with django_assert_num_queries(1):  # nothing missing now: the phases and their counts
        again = ensure_roadmap(project)
    assert [p.pk for p in again] == [p.pk for p in phases]
    assert Task.objects.filter(phase__project=project).count() == len(planned_tasks())


def test_the_declared_task_takes_its_state_from_the_declaring_kinds_jobs(project, monkeypatch):
    from django.utils import timezone

    from jobs.choices import JobStatus
    from tests.factories import make_job

    roadmap_before_the_declaration(project, monkeypatch)

    def serving_task():
        return next(t for t in roadmap_state(project)[2].tasks if t.task.key == SERVING_TASK.key)

    assert serving_task().state == "todo" and serving_task().kinds == [INFERENCE_BENCH.name]
    make_job(project.team, project=project, kind=INFERENCE_BENCH.name,
             status=JobStatus.SUCCEEDED, finished_at=timezone.now())  # fmt: skip
    assert serving_task().state == "done"


def test_a_team_task_beside_the_declared_one_is_left_alone(project, monkeypatch):
    roadmap_before_the_declaration(project, monkeypatch)
    phase = ensure_roadmap(project)[2]
    Task.objects.create(phase=phase, title="Load-test the gateway")
    ensure_roadmap(project)
    titles = list(Task.objects.filter(phase=phase).values_list("title", flat=True))
    assert titles.count(SERVING_TASK.title) == 1 and titles[-1] == "Load-test the gateway"


def test_the_serving_criterion_is_in_phase_four_because_inference_bench_declares_it():
    (declared,) = INFERENCE_BENCH.gate_criteria
    assert (declared.phase, declared.check) == (4, GateCheck.SERVING_GOODPUT_NEAR_BASELINE)
    found = {c.name: c for c in criteria.for_phase(4)}["serving_goodput_near_baseline"]
    assert (
        found.title
        == f"Serving goodput at the SLO within {declared.within_pct:g} % of the baseline"
    )
    assert INFERENCE_BENCH.name in found.reads
    assert "serving_goodput_near_baseline" not in {c.name for c in criteria.BUILT_IN}


def test_two_kinds_that_declare_one_task_differently_fail_at_start_up(monkeypatch):
    other = dataclasses.replace(
        KINDS["noop"], new_roadmap_tasks=(NewRoadmapTask(2, SERVING_TASK.key, "Something else"),)
    )
    monkeypatch.setattr(plan, "KINDS", {**KINDS, "noop": other})
    with pytest.raises(ValueError, match=r"declares roadmap task .*; it is already phase"):
        planned_tasks()


def test_a_kind_cannot_declare_a_built_in_task_or_an_unknown_check():
    base = dict(KINDS["noop"].__dict__)
    with pytest.raises(ValueError, match="built-in RoadmapTask"):
        Kind(**{**base, "new_roadmap_tasks": (NewRoadmapTask(1, "baseline", "Again"),)})
    with pytest.raises(ValueError, match="GateCheck name"):
        Kind(**{**base, "gate_criteria": (GateCriterion(4, "faster-than-light"),)})
