"""`make run` (scripts/run.sh) started as a newcomer starts it, for the tests that drive it.

The real script on a private port and var dir, so it touches nothing shared: the
embedded SQLite file and filesystem broker unless the caller names a database. The test
is the terminal: Ctrl-C is SIGINT to the script's process group, as a terminal sends it
to its foreground group.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.waits import JOB_S, SETUP_S, STOP_S
from tests.workers import ROOT, processes, wait_until

# A terminal's shell starts make run with SIGINT handled; a suite started in the
# background (`cmd &`, nohup, some CI runners) ignores it, and bash cannot trap a signal
# ignored on entry: run.sh would never hear the Ctrl-Cs. The script is exec'd in place
# (same pid) with SIGINT back to its default.
DEFAULT_SIGINT = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.argv[1], sys.argv[1:])"
)


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

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def output(self) -> str:
        return self.out.read_text()

    def login(self) -> tuple[str, str]:
        """The user and password run.sh printed for the demo login."""
        found = re.search(r"login: (\S+) / (\S+)", self.output())
        assert found, self.output()[-3000:]
        return found.group(1), found.group(2)

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


@contextlib.contextmanager
def make_run(tmp_path: Path, **env_extra: str) -> Iterator[Run]:
    """run.sh, started and answering; everything it started is gone afterwards.

    ``env_extra`` adds to the environment (DATABASE_URL for another database); rocpath's
    own variables of the suite's environment are not passed on, as a newcomer has none.
    """
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
            **env_extra,
        }
    )
    out = tmp_path / "run.out"
    with out.open("w") as handle:
        proc = subprocess.Popen(
            [sys.executable, "-c", DEFAULT_SIGINT, str(ROOT / "scripts" / "run.sh")],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    run = Run(proc=proc, out=out, var=tmp_path / "var", port=port, env=env)
    try:
        run.wait_for("rocpath is running", timeout=SETUP_S)
        yield run
    finally:
        for pid in run.session():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc.wait(timeout=STOP_S)
