"""`make run` (scripts/run.sh): it restarts a worker that died, and stops in two Ctrl-Cs.

tests/makerun.py starts the real script on a private port and var dir, with the embedded
SQLite file and broker.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.makerun import Run, cmdline, make_run
from tests.manage_helpers import manage
from tests.waits import JOB_S, STOP_S
from tests.workers import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture
def run(tmp_path: Path) -> Iterator[Run]:
    with make_run(tmp_path) as started:
        yield started


def submit(run: Run, *args: str) -> subprocess.CompletedProcess:
    return manage(run.env, "submit", "noop", "--user", "demo", *args)


def test_make_run_restarts_a_killed_worker_and_stops_in_two_ctrl_cs(run):
    # Each process logs to var/log/, not to the terminal.
    run.wait_for_log("worker", " ready.")
    run.wait_for_log("beat", "beat: Starting")  # started beside the worker, after the web
    # The comparison worker serves the comparisons' queue alone (issue 39).
    run.wait_for_log("compare", " ready.")
    queues = run.log("compare").split("[queues]")[1].split("[tasks]")[0]
    assert "> rocpath-compare " in queues and "> rocpath " not in queues, queues
    assert "Listening at" in run.log("web")

    first = run.worker()
    os.kill(first, signal.SIGKILL)
    run.wait_for("the worker exited (status 137")
    run.wait_for("the worker started again")
    run.wait_for_log("worker", " ready.", count=2)
    assert run.worker() != first and run.web_answers()
    done = submit(run, "--wait")
    assert done.returncode == 0 and "succeeded" in done.stderr, done.stderr

    long = submit(run, "--params", json.dumps({"seconds": 600}))
    assert long.returncode == 0, long.stderr
    job_id = int(long.stdout.strip())
    assert wait_until(lambda: run.job_status(job_id) == "running", JOB_S, 0.2)

    # First Ctrl-C: web and beat stop, the worker takes no new jobs and says what runs.
    run.ctrl_c()
    run.wait_for("Ctrl-C again cancels them")  # said at once, before the count
    run.wait_for("rocpath: 1 job running")
    assert wait_until(lambda: not run.web_answers(), JOB_S, 0.2), "web still answers"
    time.sleep(2)  # the worker keeps its job: nothing is canceled yet
    assert run.proc.poll() is None and run.job_status(job_id) == "running"

    # Second Ctrl-C: the job is canceled, everything ends, nothing is left behind.
    run.ctrl_c()
    run.wait_for("canceling 1 job")
    assert run.proc.wait(timeout=JOB_S) == 0, run.output()[-3000:]
    assert run.job_status(job_id) == "canceled"
    gone = wait_until(lambda: not run.session(), STOP_S)
    assert gone, {pid: cmdline(pid) for pid in run.session()}
    said = run.output()
    # One alarm, the true one (the killed worker); none for what the Ctrl-Cs stopped.
    assert said.count("exited (status") == 1, said[-3000:]
    assert "a rocpath process exited" not in said
    assert list((run.var / "run").iterdir()) == []


def test_a_ctrl_c_the_moment_the_url_is_printed_stops_the_run(tmp_path):
    # The worker, control worker and beat start once the web server answers: stopped
    # while they are still starting, they die at once, while the script counts the
    # running jobs, and bash forgot them: the run waited for ever (the bench's 60 s).
    with make_run(tmp_path) as run:
        run.ctrl_c()
        assert run.proc.wait(timeout=STOP_S) == 0, run.output()[-3000:]
        gone = wait_until(lambda: not run.session(), STOP_S)
        assert gone, {pid: cmdline(pid) for pid in run.session()}
        assert "rocpath: stopped" in run.output()
