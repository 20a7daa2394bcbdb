"""Gates open from data or by a recorded override; phase status follows the gates."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from roadmap.gates import NotAllowed, OverrideError, override_gate, revoke_override, roadmap_state
from roadmap.models import GateOverride, PhaseStatus
from roadmap.plan import ensure_roadmap, planned_tasks
from teams.choices import Role
from tests.factories import add_member, make_user
from tests.roadmap.conftest import ready_source, scan

pytestmark = pytest.mark.django_db


def admin_of(project):
    user = make_user()
    add_member(project.team, user, Role.ADMIN)
    return user


def test_a_new_project_gets_four_phases_with_their_built_in_tasks(project):
    phases = ensure_roadmap(project)
    assert [p.number for p in phases] == [1, 2, 3, 4]
    assert [p.planned_days_min for p in phases] == [7, 14, 14, 7]
    # the built-in table's twelve and those the kinds declare
    assert sum(p.tasks.count() for p in phases) == len(planned_tasks()) > 12
    assert ensure_roadmap(project)[0].pk == phases[0].pk  # idempotent


def test_phase_one_is_active_from_the_start_and_the_rest_wait_for_its_gate(project):
    states = roadmap_state(project)
    assert [s.status for s in states] == [PhaseStatus.ACTIVE] + [PhaseStatus.NOT_STARTED] * 3
    assert not states[0].gate_open
    assert states[0].phase.actual_start is not None


def test_an_override_opens_a_criterion_and_records_who_when_and_why(project):
    user = admin_of(project)
    phase = ensure_roadmap(project)[0]
    names = [c.criterion.name for c in roadmap_state(project)[0].criteria]
    for name in names:
        override_gate(phase, name, "assessed by hand in the kickoff workshop", user)
    states = roadmap_state(project)
    assert states[0].gate_open and states[0].status == PhaseStatus.DONE
    assert states[1].status == PhaseStatus.ACTIVE
    o = GateOverride.objects.filter(phase=phase).first()
    assert o.by == user and o.reason.startswith("assessed") and o.at is not None
    assert o.expires_at - o.at == timedelta(days=30)
    assert all(c.override is not None for c in states[0].criteria)


def test_an_override_needs_a_reason_of_substance_and_a_real_criterion(project):
    phase = ensure_roadmap(project)[0]
    lead = admin_of(project)
    for thin in ("ok", "aaaaaaaaaaaaaaaaaaaaaaaaa", "fine fine fine fine fine fine"):
        with pytest.raises(OverrideError, match="reason of substance"):
            override_gate(phase, "scan_of_current_code", thin, lead)
    with pytest.raises(OverrideError, match="no criterion"):
        override_gate(phase, "baseline_set", "belongs to phase four", lead)


def test_only_a_team_admin_or_the_phase_owner_overrides(project):
    phase = ensure_roadmap(project)[0]
    member = make_user()
    add_member(project.team, member, Role.MEMBER)
    reason = "assessed by hand in the kickoff workshop"
    with pytest.raises(NotAllowed):
        override_gate(phase, "scan_of_current_code", reason, member)
    phase.owner = member
    phase.save()
    assert override_gate(phase, "scan_of_current_code", reason, member).by == member


def test_a_passing_criterion_cannot_be_overridden(project):
    scan(project, ready_source(project))  # the scan criterion passes
    phase = ensure_roadmap(project)[0]
    with pytest.raises(OverrideError, match="nothing to override"):
        override_gate(
            phase, "scan_of_current_code", "just to be sure it stays open", admin_of(project)
        )


def test_an_override_expires_and_can_be_revoked(project):
    phase = ensure_roadmap(project)[0]
    lead = admin_of(project)
    reason = "vendor figures accepted until the MI300X arrives"
    o = override_gate(phase, "libraries_compared", reason, lead, days=7)
    assert _overridden(project, "libraries_compared")
    GateOverride.objects.filter(pk=o.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert not _overridden(project, "libraries_compared")  # expired: it counts again
    o = override_gate(phase, "libraries_compared", reason, lead)
    stranger = make_user()
    add_member(project.team, stranger, Role.MEMBER)
    with pytest.raises(NotAllowed):
        revoke_override(o, stranger)
    revoke_override(o, lead)
    assert o.revoked_by == lead and not _overridden(project, "libraries_compared")


def _overridden(project, name: str) -> bool:
    states = roadmap_state(project)
    return next(c for c in states[0].criteria if c.criterion.name == name).override is not None


def test_a_second_override_replaces_the_first_and_keeps_it_on_record(project):
    phase = ensure_roadmap(project)[0]
    user = admin_of(project)
    override_gate(phase, "scan_of_current_code", "the first reason, long enough", user)
    override_gate(phase, "scan_of_current_code", "the second reason, long enough", user)
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
    old = ready_source(project)
    make_job(
        project.team,
        project=project,
        source=old,
        kind=hipify_scan.KIND.name,
        status=JobStatus.SUCCEEDED,
        finished_at=timezone.now(),
    )
    assert scan_task().state == "done"
    # New code of the same lineage: the scan of the old code no longer does the task.
    current = ready_source(project)
    assert scan_task().state == "todo"
    scan(project, current)
    assert scan_task().state == "done"


def test_dates_follow_the_status_both_ways(project):
    phase = ensure_roadmap(project)[0]
    lead = admin_of(project)
    names = [c.criterion.name for c in roadmap_state(project)[0].criteria]
    overrides = [
        override_gate(phase, name, "assessed by hand in the kickoff workshop", lead)
        for name in names
    ]
    states = roadmap_state(project)
    assert states[0].phase.actual_end is not None and states[1].phase.actual_start is not None
    revoke_override(overrides[0], lead)  # phase 1's gate closes again
    states = roadmap_state(project)
    assert states[0].status == PhaseStatus.ACTIVE and states[0].phase.actual_end is None
    assert states[1].status == PhaseStatus.NOT_STARTED
    assert states[1].phase.actual_start is None and states[1].phase.actual_end is None


def test_an_override_from_before_expiry_lasts_the_default_from_when_it_was_made(project):
    phase = ensure_roadmap(project)[0]
    lead = admin_of(project)
    old = GateOverride.objects.create(
        phase=phase, criterion="libraries_compared", reason="recorded before expiry", by=lead,
        at=timezone.now() - timedelta(days=31),
    )  # fmt: skip
    assert old.expires_at is None and not _overridden(project, "libraries_compared")
    GateOverride.objects.filter(pk=old.pk).update(at=timezone.now() - timedelta(days=1))
    assert _overridden(project, "libraries_compared")
