"""A slow webhook receiver stalls nobody (issue 37, item 1).

The control queue's one slot also runs the reaper, the dispatcher and the schedules'
firing, so one delivery's try must end by a total deadline, whatever the receiver
drips; a try that was lost (its process killed) must not be re-sent for ever; and the
page's "Send a test alert" cannot be pressed in a loop.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest
from django.utils import timezone

from results import alerts
from results.models import Alert, AlertEvent, AlertSettings, Delivery, DeliveryStatus
from tests.factories import make_project

pytestmark = pytest.mark.django_db


@pytest.fixture
def drip() -> Iterator[str]:
    """A receiver on 127.0.0.1 that answers one byte every 0.3 s, for ever."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    stop = threading.Event()

    def serve() -> None:
        conn, _ = server.accept()
        conn.recv(65536)
        with conn:
            for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 10_000:
                if stop.wait(0.3):
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    return

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}/hook"
    stop.set()
    server.close()


@pytest.mark.process
@pytest.mark.django_db(transaction=True)  # deliver() runs in a thread of its own
def test_a_receiver_dripping_bytes_holds_a_try_no_longer_than_its_deadline(team, settings, drip):
    settings.ROCPATH_WEBHOOK_HOST_ALLOW = ["127.0.0.1/32"]
    settings.ROCPATH_ALERT_TIMEOUT_S = 2  # each byte comes well within it
    settings.ROCPATH_ALERT_TRY_DEADLINE_S = 3
    project = make_project(team, "solver")
    alerts.save_settings(project, webhook_urls=[drip], emails=[], events=[AlertEvent.TEST])
    alert = Alert.objects.create(project=project, event=AlertEvent.TEST)
    delivery = Delivery.objects.create(alert=alert, channel="webhook", target=drip, body="{}")
    done = threading.Thread(target=alerts.deliver, args=(delivery.pk,), daemon=True)
    done.start()
    done.join(timeout=20)  # the drip goes on for an hour
    assert not done.is_alive(), "the try outlived its deadline"
    delivery.refresh_from_db()
    attempt = delivery.tries.get()
    assert "deadline" in attempt.error and delivery.status == DeliveryStatus.RETRYING


def test_a_delivery_whose_tries_were_lost_is_ended_not_sent_again(team, settings, monkeypatch):
    # Each try was claimed (attempts counted) and its process killed before it recorded.
    project = make_project(team, "solver")
    alert = Alert.objects.create(project=project, event=AlertEvent.TEST)
    delivery = Delivery.objects.create(
        alert=alert,
        channel="webhook",
        target="https://hooks.example.com/x",
        body="{}",
        attempts=settings.ROCPATH_ALERT_MAX_ATTEMPTS,
        status=DeliveryStatus.PENDING,
    )
    Delivery.objects.filter(pk=delivery.pk).update(
        created_at=timezone.now() - timezone.timedelta(hours=1)
    )
    sent = []
    monkeypatch.setattr(
        "results.alerts._try_webhook", lambda d: sent.append(d) or (200, "", "", False, None)
    )
    monkeypatch.setattr("results.alerts._queue", lambda *a, **k: sent.append(a))
    assert alerts.requeue_overdue() == []
    alerts.deliver(delivery.pk)
    delivery.refresh_from_db()
    assert sent == [] and delivery.status == DeliveryStatus.FAILED


def test_the_test_alert_button_is_rate_limited(member_client, team, settings, monkeypatch):
    monkeypatch.setattr("results.alerts._queue", lambda *a, **k: None)
    project = make_project(team, "solver")
    alerts.save_settings(
        project, webhook_urls=["https://hooks.example.com/x"], emails=[], events=[AlertEvent.TEST]
    )
    page = f"/projects/{project.pk}/alerts/"
    for _ in range(settings.ROCPATH_ALERT_TESTS_PER_HOUR + 3):
        member_client.post(page, {"action": "test"})
    sent = Alert.objects.filter(project=project, event=AlertEvent.TEST).count()
    assert sent == settings.ROCPATH_ALERT_TESTS_PER_HOUR
    answer = member_client.post(page, {"action": "test"}, follow=True)
    assert "again in" in answer.content.decode()
    assert AlertSettings.objects.filter(project=project).exists()
