"""Gates open from data or by a recorded override; phase status follows the gates."""

from __future__ import annotations

import pytest

from roadmap.gates import OverrideError, override_gate, roadmap_state
from roadmap.models import GateOverride, PhaseStatus
from roadmap.plan import ensure_roadmap
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def test_a_new_project_gets_four_phases_with_their_built_in_tasks(project):
    phases = ensure_roadmap(project)
    assert [p.number for p in phases] == [1, 2, 3, 4]
    assert [p.planned_days_min for p in phases] == [7, 14, 14, 7]
    assert sum(p.tasks.count() for p in phases) == 12
    assert ensure_roadmap(project)[0].pk == phases[0].pk  # idempotent


def test_phase_one_is_active_from_the_start_and_the_rest_wait_for_its_gate(project):
    states = roadmap_state(project)
    assert [s.status for s in states] == [PhaseStatus.ACTIVE] + [PhaseStatus.NOT_STARTED] * 3
    assert not states[0].gate_open
    assert states[0].phase.actual_start is not None


def test_an_override_opens_a_criterion_and_records_who_when_and_why(project):
    user = make_user()
    phase = ensure_roadmap(project)[0]
    names = [c.criterion.name for c in roadmap_state(project)[0].criteria]
    for name in names:
        override_gate(phase, name, "assessed by hand in the kickoff workshop", user)
    states = roadmap_state(project)
    assert states[0].gate_open and states[0].status == PhaseStatus.DONE
    assert states[1].status == PhaseStatus.ACTIVE
    o = GateOverride.objects.filter(phase=phase).first()
    assert o.by == user and o.reason.startswith("assessed") and o.at is not None
    assert all(c.override is not None for c in states[0].criteria)


def test_an_override_needs_a_reason_and_a_real_criterion(project):
    phase = ensure_roadmap(project)[0]
    with pytest.raises(OverrideError, match="reason"):
        override_gate(phase, "scan_of_current_code", "ok", make_user())
    with pytest.raises(OverrideError, match="no criterion"):
        override_gate(phase, "baseline_set", "belongs to phase four", make_user())


def test_a_second_override_replaces_the_first_and_keeps_it_on_record(project):
    phase = ensure_roadmap(project)[0]
    user = make_user()
    override_gate(phase, "scan_of_current_code", "first reason, long enough", user)
    override_gate(phase, "scan_of_current_code", "second reason, long enough", user)
    rows = GateOverride.objects.filter(phase=phase, criterion="scan_of_current_code")
    assert rows.count() == 2 and rows.filter(revoked_at__isnull=True).count() == 1


def test_a_blocked_phase_stays_blocked_and_holds_back_the_next(project):
    phases = ensure_roadmap(project)
    phases[0].status = PhaseStatus.BLOCKED
    phases[0].save()
    states = roadmap_state(project)
    assert states[0].status == PhaseStatus.BLOCKED
    assert states[1].status == PhaseStatus.NOT_STARTED


def test_a_task_with_a_kind_takes_its_state_from_the_jobs(project):
    from django.utils import timezone

    from jobs.choices import JobStatus
    from stack.kinds import hipify_scan
    from tests.factories import make_job

    def scan_task():
        return next(t for t in roadmap_state(project)[0].tasks if t.task.key == "assess-porting")

    assert scan_task().state == "todo" and scan_task().kinds == [hipify_scan.KIND.name]
    make_job(
        project.team,
        project=project,
        kind=hipify_scan.KIND.name,
        status=JobStatus.FAILED,
        finished_at=timezone.now(),
    )
    assert scan_task().state == "failed"
    make_job(
        project.team,
        project=project,
        kind=hipify_scan.KIND.name,
        status=JobStatus.SUCCEEDED,
        finished_at=timezone.now(),
    )
    assert scan_task().state == "done"
