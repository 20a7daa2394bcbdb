"""The control worker down while beat keeps sending: the messages that queued meanwhile
expire (each after its own interval) instead of all running back to back when it returns,
and the first firing after that runs and stamps the beat /healthz reads."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import uuid
from datetime import datetime
from pathlib import Path

import pytest
import redis
from django.test import Client
from django.utils import timezone

from jobs.models import ControlBeat
from tests.faults.conftest import start_worker
from tests.waits import JOB_S, START_S, STOP_S, wait_until
from tests.workers import CELERY, ROOT, worker_env

pytestmark = [pytest.mark.faults, pytest.mark.integration, pytest.mark.slow]

QUEUED = 4  # dispatch messages to let pile up while no control worker runs


def _start_beat(settings, tmp_path: Path, broker_url: str, **env: str) -> subprocess.Popen:
    log = (tmp_path / "beat.log").open("a")
    return subprocess.Popen(
        [CELERY, "-A", "config", "beat", "-s", str(tmp_path / "beat-schedule"), "-l", "INFO"],
        cwd=ROOT,
        env=worker_env(
            settings,
            ROCPATH_QUEUE=settings.CELERY_TASK_DEFAULT_QUEUE,
            CELERY_BROKER_URL=broker_url,
            **env,
        ),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _kill(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=STOP_S)


def _expiries(client: redis.Redis, queue: str) -> list[datetime | None]:
    """When each message waiting in ``queue`` expires (kombu's Redis transport: a list)."""
    expiries = [json.loads(raw)["headers"].get("expires") for raw in client.lrange(queue, 0, -1)]
    return [datetime.fromisoformat(when) if when else None for when in expiries]


def test_dispatches_queued_while_the_control_worker_was_down_expire_instead_of_running_back_to_back(
    transactional_db, private_broker, settings, tmp_path
):
    settings.CELERY_TASK_DEFAULT_QUEUE = queue = f"cb-{uuid.uuid4().hex[:8]}"
    control_queue = f"{queue}-control"
    env = {"ROCPATH_DISPATCH_INTERVAL_S": "1"}
    client = redis.Redis.from_url(private_broker.url)
    beat = _start_beat(settings, tmp_path, private_broker.url, **env)
    try:
        assert wait_until(lambda: client.llen(control_queue) >= QUEUED, START_S), (
            tmp_path / "beat.log"
        ).read_text()[-3000:]
    finally:
        _kill(beat)
    expiries = _expiries(client, control_queue)
    queued = len(expiries)
    assert queued >= QUEUED and all(expiries), "beat sent the dispatches without an expiry"
    # The control worker comes back once even the newest of them is past its expiry.
    newest = max(when for when in expiries if when)
    assert wait_until(lambda: timezone.now() > newest, JOB_S)

    control = start_worker(
        settings,
        tmp_path,
        private_broker,
        name="control",
        queue=control_queue,
        concurrency=1,
        **env,
    )
    beat = None
    try:
        control.wait_for_log("Discarding revoked task: jobs.dispatch_jobs[", queued)
        log = control.log.read_text()
        assert "succeeded in" not in log, log[-3000:]  # not one of the backlog ran
        assert not ControlBeat.objects.exists()  # a discarded message is no beat

        # Beat back: its next dispatch runs at once and stamps the control worker's beat.
        beat = _start_beat(settings, tmp_path, private_broker.url, **env)
        control.wait_for_log("Task jobs.dispatch_jobs[")
        assert wait_until(ControlBeat.objects.exists, JOB_S)
        stamp = ControlBeat.objects.get(task="jobs.dispatch_jobs")
        assert stamp.worker.startswith("control@")
        body = Client().get("/healthz").json()
        assert body["checks"]["control_worker"] == "ok", body
    finally:
        if beat is not None:
            _kill(beat)
        control.stop()
