"""Two real beats send the schedules' task to a real control worker: each due run, one job."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from datetime import timedelta

import pytest
from django.utils import timezone

from jobs.choices import LaunchType
from jobs.models import Job, Schedule
from jobs.services.schedules import save_schedule
from tests.workers import CELERY, ROOT, Worker, wait_until, worker_env

pytestmark = [pytest.mark.integration, pytest.mark.slow]

FIRED = "Task jobs.fire_schedules["


def test_two_beats_and_a_control_worker_fire_each_due_schedule_once(
    worker, settings, tmp_path, user, team
):
    rows = [
        save_schedule(
            Schedule(name=f"s{i}", team=team, kind="noop", params={"seconds": 0}, cron="0 3 * * *"),
            user=user,
        )
        for i in range(40)
    ]
    Schedule.objects.update(next_run_at=timezone.now() - timedelta(hours=2))
    env = worker_env(settings, ROCPATH_QUEUE=worker.queue, ROCPATH_SCHEDULE_INTERVAL_S="1")
    control = Worker(
        env=env,
        name=f"control-{worker.queue}@%h",
        queue=f"{worker.queue}-control",
        log=tmp_path / "control.log",
        concurrency=2,  # two beats' tasks run at once
    )
    control.log.touch()
    control.start()
    beats = []
    try:
        for n in range(2):
            log = (tmp_path / f"beat{n}.log").open("a")
            beats.append(
                subprocess.Popen(
                    [
                        CELERY,
                        "-A",
                        "config",
                        "beat",
                        "-s",
                        str(tmp_path / f"beat{n}"),
                        "-l",
                        "INFO",
                    ],
                    cwd=ROOT,
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
        assert wait_until(
            lambda: not Schedule.objects.filter(last_job__isnull=True).exists(), 60, 0.2
        ), control.log.read_text()[-3000:]
        done = control.log.read_text().count(FIRED)
        # More beats after every schedule fired: none of them may fire one again.
        control.wait_for_log(f"{FIRED}", done + 6, timeout=60)
    finally:
        for beat in beats:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(beat.pid, signal.SIGKILL)
            beat.wait()
        control.stop()
    for n in range(2):
        assert "Sending due task fire-schedules" in (tmp_path / f"beat{n}.log").read_text()
    jobs = Job.objects.filter(schedule__in=rows)
    assert sorted(jobs.values_list("schedule_id", flat=True)) == sorted(s.pk for s in rows)
    assert set(jobs.values_list("launch_type", flat=True)) == {LaunchType.SCHEDULED}
    for schedule in Schedule.objects.all():
        assert schedule.next_run_at > timezone.now() and schedule.consecutive_failures == 0
