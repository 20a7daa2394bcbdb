"""The control worker's beat: stamped by a task taken from the control queue, read by
/healthz; the periodic tasks' messages expire so a backlog does not run back to back."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from django.conf import settings

from jobs.models import ControlBeat
from jobs.models.control_beat import last_beat, record_beat
from jobs.signals import _control_beat


def _task(name: str, routing_key: str | None) -> SimpleNamespace:
    delivery = {"routing_key": routing_key} if routing_key else None
    return SimpleNamespace(
        name=name, request=SimpleNamespace(delivery_info=delivery, hostname="control@h")
    )


@pytest.mark.django_db
def test_a_task_taken_from_the_control_queue_stamps_the_beat_in_place():
    _control_beat(sender=_task("jobs.dispatch_jobs", settings.ROCPATH_CONTROL_QUEUE))
    first = ControlBeat.objects.get(task="jobs.dispatch_jobs")
    assert first.worker == "control@h"
    _control_beat(sender=_task("jobs.dispatch_jobs", settings.ROCPATH_CONTROL_QUEUE))
    assert ControlBeat.objects.count() == 1
    assert ControlBeat.objects.get().at >= first.at
    assert last_beat() == ControlBeat.objects.get().at


@pytest.mark.django_db
def test_a_task_run_eagerly_or_from_another_queue_says_nothing_of_the_control_worker():
    _control_beat(sender=_task("jobs.dispatch_jobs", None))
    _control_beat(sender=_task("jobs.run_job", settings.CELERY_TASK_DEFAULT_QUEUE))
    assert last_beat() is None


@pytest.mark.django_db
def test_the_newest_of_the_control_tasks_is_the_beat():
    record_beat("jobs.reap_stuck_jobs")
    record_beat("jobs.dispatch_jobs")
    assert last_beat() == ControlBeat.objects.get(task="jobs.dispatch_jobs").at


def test_every_periodic_message_expires_within_its_own_interval():
    for name, entry in settings.CELERY_BEAT_SCHEDULE.items():
        expires = entry["options"].get("expires")
        assert expires is not None, f"{name}: a backlog of it would run back to back"
        assert 0 < expires <= entry["schedule"], name
        assert entry["options"]["queue"] == settings.ROCPATH_CONTROL_QUEUE, name
