"""A delivery end to end: notify commits, a real Celery worker tries, fails, waits, retries."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import transaction

from results import alerts
from results.models import AlertEvent, AlertSettings, Delivery, DeliveryStatus
from tests.factories import make_project
from tests.results.receiver import receiver
from tests.workers import Worker, wait_until, worker_env

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture
def alert_worker(transactional_db: None, settings: Any, tmp_path: Any) -> Iterator[Worker]:
    """An alert worker as make run starts one (threads) on a queue of this test's own,
    allowed to call 127.0.0.1."""
    queue = f"it-{uuid.uuid4().hex[:8]}-alerts"
    settings.ROCPATH_ALERT_QUEUE = queue
    env = worker_env(
        settings,
        ROCPATH_ALERT_QUEUE=queue,
        ROCPATH_WEBHOOK_HOST_ALLOW="127.0.0.1",
        ROCPATH_ALERT_RETRY_BASE_S="1",
    )
    handle = Worker(
        env=env, name=f"{queue}@%h", queue=queue, log=tmp_path / "worker.log", pool="threads"
    )
    handle.log.touch()
    handle.start()
    yield handle
    handle.stop()


def test_a_worker_delivers_after_two_failures_waiting_longer_each_time(
    alert_worker: Worker, team: Any
) -> None:
    project = make_project(team, "Worker alerts")
    with receiver(503, 500, 200) as hook:
        AlertSettings.objects.create(
            project=project, webhook_urls=[hook.url], events=[AlertEvent.SCHEDULE_STALLED]
        )
        with transaction.atomic():
            alert = alerts.notify(project, AlertEvent.SCHEDULE_STALLED, {"schedule": {"id": 1}})
        assert alert is not None
        delivery = alert.deliveries.get()
        assert wait_until(
            lambda: Delivery.objects.get(pk=delivery.pk).status == DeliveryStatus.DELIVERED,
            60,
            0.1,
        ), alert_worker.log.read_text()[-3000:]
        first, second, third = hook.wait_for(3)
    # The waits were 1 s then 2 s (ROCPATH_ALERT_RETRY_BASE_S=1), measured at the receiver.
    assert second.at - first.at >= 0.9
    assert third.at - second.at >= 1.9
    assert first.body == second.body == third.body
    tries = list(Delivery.objects.get(pk=delivery.pk).tries.order_by("number"))
    assert [(t.status_code, t.will_retry, t.retry_in_s) for t in tries] == [
        (503, True, 1.0),
        (500, True, 2.0),
        (200, False, None),
    ]
