"""The embedded broker (`make run`'s filesystem transport) under concurrent workers.

Three real worker processes (prefork, two children each) consume one queue of the
filesystem broker while a separate process submits jobs from many threads at once, so
writers and readers of the message folder race for real. The database is the test
PostgreSQL, so that what is measured is the broker and nothing else.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from jobs.choices import JobStatus
from jobs.models import Job, JobEvent
from tests.waits import SETUP_S
from tests.workers import ROOT, TERMINAL, Worker, wait_until, worker_env

pytestmark = [pytest.mark.integration, pytest.mark.slow]

WORKERS = 3
THREADS = 12
JOBS_PER_THREAD = 25  # 300 jobs

SUBMITTER = """
import json, sys, threading
import django
django.setup()
from django.contrib.auth import get_user_model
from django.db import connection
from jobs.services import submit_job

user = get_user_model().objects.get(username=sys.argv[1])
threads, per_thread = int(sys.argv[2]), int(sys.argv[3])
ids, errors, start = [], [], threading.Barrier(threads)

def submit():
    start.wait()  # every thread writes to the broker at the same moment
    try:
        for _ in range(per_thread):
            ids.append(submit_job(user=user, kind="noop").pk)
    except Exception as exc:
        errors.append(repr(exc))
    finally:
        connection.close()

workers = [threading.Thread(target=submit) for _ in range(threads)]
for thread in workers:
    thread.start()
for thread in workers:
    thread.join()
print(json.dumps({"ids": ids, "errors": errors}))
"""


def test_hundreds_of_jobs_from_many_threads_each_run_once_on_three_workers(
    transactional_db, settings, user, tmp_path
):
    queue = f"stress-{uuid.uuid4().hex[:8]}"
    env = worker_env(
        settings,
        CELERY_BROKER_URL="filesystem://localhost/",
        ROCPATH_VAR_DIR=str(tmp_path / "var"),
        ROCPATH_QUEUE=queue,
    )
    workers = [
        Worker(env=env, name=f"{queue}-{n}@%h", queue=queue, log=tmp_path / f"worker{n}.log")
        for n in range(WORKERS)
    ]
    for handle in workers:
        handle.log.touch()
        handle.start()
    try:
        submitted = subprocess.run(
            [sys.executable, "-c", SUBMITTER, user.username, str(THREADS), str(JOBS_PER_THREAD)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=SETUP_S,
            check=False,
        )
        assert submitted.returncode == 0, submitted.stderr[-3000:]
        report = json.loads(submitted.stdout.strip().splitlines()[-1])
        assert report["errors"] == []
        ids = report["ids"]
        assert len(ids) == THREADS * JOBS_PER_THREAD

        jobs = Job.objects.filter(pk__in=ids)
        settled = wait_until(
            lambda: (
                jobs.filter(status__in=TERMINAL).count() == len(ids)
                or any(handle.proc.poll() is not None for handle in workers)
            ),
            SETUP_S,
            0.5,
        )
        logs = "".join(handle.log.read_text() for handle in workers)
        dead = [handle.name for handle in workers if handle.proc.poll() is not None]
        assert not dead, f"workers died: {dead}\n{logs[-4000:]}"
        assert "Unrecoverable error" not in logs, logs[-4000:]
        assert settled, (
            f"{jobs.exclude(status__in=TERMINAL).count()} of {len(ids)} jobs never ended "
            f"(messages lost):\n{logs[-4000:]}"
        )
        statuses = sorted(set(jobs.values_list("status", flat=True)))
        assert statuses == [JobStatus.SUCCEEDED], statuses
        assert set(jobs.values_list("attempt", flat=True)) == {1}
        # Each message was delivered once: one task received and one runner per job.
        for job_id in ids:
            task_id = Job.objects.get(pk=job_id).task_id
            assert logs.count(f"[{task_id}] received") == 1, job_id
        runners = JobEvent.objects.filter(job_id__in=ids, message__startswith="runner started")
        assert runners.count() == len(ids)
        broker = Path(tmp_path / "var" / "broker" / "queue")
        assert list(broker.iterdir()) == [], "messages or partial files left in the broker"
    finally:
        for handle in workers:
            handle.stop()
