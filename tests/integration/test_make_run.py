"""`make run` (scripts/run.sh): it restarts a worker that died, and stops in two Ctrl-Cs.

The real script on a private port and var dir, with the embedded SQLite file and broker,
so it touches nothing shared. The test is the terminal: Ctrl-C is SIGINT to the script's
process group, as a terminal sends it to its foreground group.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.manage_helpers import manage
from tests.waits import JOB_S, SETUP_S, STOP_S
from tests.workers import ROOT, processes, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def cmdline(pid: int) -> str:
    with contextlib.suppress(OSError):
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    return ""


@dataclass
class Run:
    proc: subprocess.Popen
    out: Path
    var: Path
    port: int
    env: dict[str, str]

    def output(self) -> str:
        return self.out.read_text()

    def wait_for(self, text: str, count: int = 1, timeout: float = JOB_S) -> None:
        if not wait_until(lambda: self.output().count(text) >= count, timeout, 0.2):
            raise TimeoutError(f"run.sh never said {text!r}:\n{self.output()[-4000:]}")

    def log(self, name: str) -> str:
        path = self.var / "log" / f"{name}.log"
        return path.read_text() if path.exists() else ""

    def wait_for_log(self, name: str, text: str, count: int = 1) -> None:
        if not wait_until(lambda: self.log(name).count(text) >= count, JOB_S, 0.2):
            raise TimeoutError(
                f"var/log/{name}.log never said {text!r}:\n{self.log(name)[-3000:]}\n"
                f"run.sh said:\n{self.output()[-3000:]}"
            )

    def session(self) -> dict[int, list[str]]:
        """Every live process of the run: the script started it in a session of its own."""
        return processes(lambda fields: int(fields[3]) == self.proc.pid)

    def worker(self) -> int:
        """The job worker's main process: the script's child that runs `celery … worker@`."""
        found = [
            pid
            for pid, fields in self.session().items()
            if int(fields[1]) == self.proc.pid
            and " worker " in cmdline(pid)
            and "worker@" in cmdline(pid)
        ]
        assert len(found) == 1, (found, self.output()[-3000:])
        return found[0]

    def web_answers(self) -> bool:
        with socket.socket() as client:
            client.settimeout(1)
            return client.connect_ex(("127.0.0.1", self.port)) == 0

    def job_status(self, job_id: int) -> str:
        with contextlib.closing(sqlite3.connect(self.var / "rocpath.sqlite3", timeout=30)) as db:
            return db.execute("SELECT status FROM jobs_job WHERE id = ?", (job_id,)).fetchone()[0]

    def ctrl_c(self) -> None:
        os.killpg(self.proc.pid, signal.SIGINT)


DEFAULT_SIGINT = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.argv[1], sys.argv[1:])"
)


@pytest.fixture
def run(tmp_path: Path) -> Iterator[Run]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "CELERY_BROKER_URL", "SECRET_KEY", "DJANGO_SETTINGS_MODULE"}
        and not k.startswith("ROCPATH_")
    }
    port = free_port()
    env.update(
        {
            "ROCPATH_VAR_DIR": str(tmp_path / "var"),
            "ROCPATH_PORT": str(port),
            "ROCPATH_EXECUTOR": "local",
            "ROCPATH_HEARTBEAT_S": "1",
            "PYTHONUNBUFFERED": "1",
        }
    )
    out = tmp_path / "run.out"
    with out.open("w") as handle:
        proc = subprocess.Popen(
            # A terminal's shell starts make run with SIGINT handled; a suite started in
            # the background (`cmd &`, nohup, some CI runners) ignores it, and bash cannot
            # trap a signal ignored on entry: run.sh would never hear the Ctrl-Cs. The
            # script is exec'd in place (same pid) with SIGINT back to its default.
            [sys.executable, "-c", DEFAULT_SIGINT, str(ROOT / "scripts" / "run.sh")],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    handle = Run(proc=proc, out=out, var=tmp_path / "var", port=port, env=env)
    try:
        handle.wait_for("rocpath is running", timeout=SETUP_S)
        yield handle
    finally:
        left = handle.session()
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc.wait(timeout=STOP_S)


def submit(run: Run, *args: str) -> subprocess.CompletedProcess:
    return manage(run.env, "submit", "noop", "--user", "demo", *args)


def test_make_run_restarts_a_killed_worker_and_stops_in_two_ctrl_cs(run):
    # Each process logs to var/log/, not to the terminal.
    run.wait_for_log("worker", " ready.")
    assert "Listening at" in run.log("web") and "beat: Starting" in run.log("beat")

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
