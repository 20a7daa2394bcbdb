"""A slow webhook receiver stalls nobody (issue 37, item 1).

Deliveries run on a queue of their own (ROCPATH_ALERT_QUEUE), served by a worker of
threads: the control queue's one slot, which runs the reaper, the dispatcher and the
schedules' firing, never waits on a receiver. One delivery's try still ends by a total
deadline, whatever the receiver drips; a try that was lost (its process killed) is not
re-sent for ever; and the page's "Send a test alert" cannot be pressed in a loop.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from config.celery import queue_task
from jobs.choices import JobStatus
from jobs.models import Job, Schedule
from results import alerts
from results.models import Alert, AlertEvent, AlertSettings, Delivery, DeliveryStatus
from tests.factories import make_job, make_project
from tests.workers import Worker, wait_until, worker_env

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


@pytest.mark.process
@pytest.mark.django_db(transaction=True)  # the try runs in a process of its own
def test_a_try_whose_process_is_killed_mid_way_is_in_the_delivery_log_saying_so(
    team, settings, drip
):
    settings.ROCPATH_WEBHOOK_HOST_ALLOW = ["127.0.0.1/32"]
    project = make_project(team, "solver")
    alerts.save_settings(project, webhook_urls=[drip], emails=[], events=[AlertEvent.TEST])
    alert = Alert.objects.create(project=project, event=AlertEvent.TEST)
    delivery = Delivery.objects.create(alert=alert, channel="webhook", target=drip, body="{}")
    code = (
        f"import django; django.setup(); from results import alerts; alerts.deliver({delivery.pk})"
    )
    env = worker_env(settings, ROCPATH_WEBHOOK_HOST_ALLOW="127.0.0.1/32")
    proc = subprocess.Popen([sys.executable, "-c", code], env=env)
    # Two minutes old: without the claim's hold, the overdue sweep (every 10 s) would send
    # it again while this try is still under way, and the receiver hear it twice.
    Delivery.objects.filter(pk=delivery.pk).update(created_at=timezone.now() - timedelta(minutes=2))
    try:
        assert wait_until(lambda: Delivery.objects.get(pk=delivery.pk).attempts == 1, 60, 0.2)
        assert alerts.requeue_overdue() == []
    finally:
        proc.send_signal(signal.SIGKILL)  # as a worker killed while the receiver drips
        proc.wait()
    (attempt,) = Delivery.objects.get(pk=delivery.pk).tries.all()
    assert attempt.number == 1 and attempt.error == alerts.UNFINISHED


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


class Drips:
    """Receivers on 127.0.0.1 that answer one byte every ``every_s``, for ever, to every
    connection (the red team's: a byte every 8 s, inside the 10-s read timeout)."""

    def __init__(self, every_s: float) -> None:
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(16)
        self.every_s, self.accepted, self.stop = every_s, 0, threading.Event()
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}/hook"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self._drip, args=(conn,), daemon=True).start()

    def _drip(self, conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)
            for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 10_000:
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    return
                if self.stop.wait(self.every_s):
                    return

    def close(self) -> None:
        self.stop.set()
        self.server.close()


@pytest.mark.integration
@pytest.mark.slow
def test_an_every_minute_schedule_fires_and_the_reaper_runs_while_receivers_drip(
    transactional_db, settings, tmp_path, user, team
):
    run = f"it-{uuid.uuid4().hex[:8]}"
    control_queue, alert_queue = f"{run}-control", f"{run}-alerts"
    settings.ROCPATH_CONTROL_QUEUE, settings.ROCPATH_ALERT_QUEUE = control_queue, alert_queue
    settings.CELERY_TASK_DEFAULT_QUEUE = f"{run}-jobs"  # the fired job waits there, unrun
    settings.ROCPATH_WEBHOOK_HOST_ALLOW = ["127.0.0.1/32"]
    env = worker_env(
        settings,
        ROCPATH_QUEUE=f"{run}-jobs",
        ROCPATH_CONTROL_QUEUE=control_queue,
        ROCPATH_ALERT_QUEUE=alert_queue,
        ROCPATH_WEBHOOK_HOST_ALLOW="127.0.0.1",
        ROCPATH_RUNNING_GRACE_S="2",
    )
    # The two service workers as make run starts them (scripts/run.sh).
    control = Worker(
        env=env, name=f"{control_queue}@%h", queue=control_queue, log=tmp_path / "control.log"
    )
    control.concurrency = 1
    deliverer = Worker(
        env=env,
        name=f"{alert_queue}@%h",
        queue=alert_queue,
        log=tmp_path / "alerts.log",
        pool="threads",
        concurrency=8,
    )
    drips = Drips(every_s=8)
    try:
        for handle in (control, deliverer):
            handle.log.touch()
            handle.start()
        project = make_project(team, "solver")
        urls = [f"{drips.url}/{n}" for n in range(5)]  # five slow receivers, as found
        alerts.save_settings(project, webhook_urls=urls, emails=[], events=[AlertEvent.TEST])
        with transaction.atomic():
            alerts.notify(project, AlertEvent.TEST, {"message": "drip"})
        assert wait_until(lambda: drips.accepted >= 1, 30, 0.1), deliverer.log.read_text()
        # A receiver holds a try for its 20-s deadline; the control work comes due.
        due = timezone.now()
        schedule = Schedule.objects.create(
            name="every minute",
            team=team,
            project=project,
            kind="noop",
            cron="* * * * *",
            created_by=user,
            next_run_at=due - timedelta(seconds=1),
        )
        dead = make_job(
            team,
            status=JobStatus.RUNNING,
            worker="gone@nowhere",
            heartbeat_at=due - timedelta(minutes=5),
        )
        sent = time.monotonic()
        queue_task("jobs.fire_schedules", queue=control_queue)  # what beat sends
        queue_task("jobs.reap_stuck_jobs", queue=control_queue)
        fired = wait_until(
            lambda: (
                Job.objects.filter(schedule=schedule).exists()
                and Job.objects.get(pk=dead.pk).status == JobStatus.ERRORED
            ),
            15,
            0.1,
        )
        took = time.monotonic() - sent
        assert fired, control.log.read_text()[-3000:]
        assert took < 10, f"the control queue's work took {took:.1f} s beside the drips"
        assert drips.accepted == 5  # all five tries held at once, each by a thread of its own
        assert Delivery.objects.filter(alert__project=project).count() == 5
    finally:
        drips.close()
        control.stop()
        deliverer.stop()
