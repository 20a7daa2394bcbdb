"""A throw-away rocpath for benchmarks: its own PostgreSQL database and Redis db,
its own gunicorn and Celery worker on 127.0.0.1, torn down at the end.

    with BenchStack(executor="local", concurrency=4) as stack:
        stack.submit({"kind": "noop"})
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class BenchStack:
    def __init__(
        self,
        *,
        executor: str = "local",
        concurrency: int = 4,
        web_workers: int = 2,
        web_threads: int = 4,
        pg: str = "postgres://postgres@127.0.0.1:5432",
        redis: str = "redis://127.0.0.1:6379/14",
        extra_env: dict[str, str] | None = None,
        control: bool = False,
        slurm: bool = False,
        slurm_scheduler_parameters: str = "",
    ) -> None:
        self.run_id = uuid.uuid4().hex[:8]
        self.pg = pg
        self.dbname = f"rocpath_bench_{self.run_id}"
        self.var = ROOT / "var" / f"bench-{self.run_id}"
        self.queue = f"bench-{self.run_id}"
        self.concurrency = concurrency
        self.web = (web_workers, web_threads)
        self.env = dict(os.environ)
        self.env.update(
            {
                "DJANGO_SETTINGS_MODULE": "config.settings.base",
                "DATABASE_URL": f"{pg}/{self.dbname}",
                "CELERY_BROKER_URL": redis,
                "CELERY_RESULT_BACKEND": redis,
                "ROCPATH_QUEUE": self.queue,
                "ROCPATH_VAR_DIR": str(self.var),
                "ROCPATH_EXECUTOR": executor,
                "SECRET_KEY": "bench-only",
                "LOG_LEVEL": "WARNING",
                # The bench submits hundreds of jobs a minute from one token and address.
                "ROCPATH_THROTTLE_USER": "1000000/minute",
                "ROCPATH_THROTTLE_ADDRESS": "1000000/minute",
                "ROCPATH_THROTTLE_SUBMIT": "1000000/minute",
                **(extra_env or {}),
            }
        )
        self.control = control  # also a control worker and beat (dispatcher, reaper)
        # A private one-node Slurm cluster (tests/slurmcluster.py) the worker submits to.
        self.slurm = None
        if slurm:
            from tests.slurmcluster import SlurmCluster

            self.slurm = SlurmCluster(
                self.var / "slurm", scheduler_parameters=slurm_scheduler_parameters
            )
            self.env.update(self.slurm.env)
        self.procs: dict[str, subprocess.Popen] = {}
        self.commands: dict[str, list[str]] = {}
        self.port = 0
        self.token = ""

    def __enter__(self) -> BenchStack:
        os.environ.update(self.env)
        subprocess.run(
            ["psql", f"{self.pg}/postgres", "-qc", f"CREATE DATABASE {self.dbname}"], check=True
        )
        try:
            self._start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _manage(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            check=True,
            capture_output=True,
            text=True,
        )
        return done.stdout

    def _start(self) -> None:
        if self.slurm is not None:
            self.slurm.start()  # returns once its node is idle
        self._manage("migrate", "-v0")
        setup = (
            "from django.contrib.auth.models import User;"
            "from teams.models import Team, Membership;"
            "from rest_framework.authtoken.models import Token;"
            "u=User.objects.create_user('bench');"
            "t=Team.objects.create(name='bench', slug='bench');"
            "Membership.objects.create(team=t, user=u, role='member');"
            "print('TOKEN', Token.objects.create(user=u).key)"
        )
        out = self._manage("shell", "-c", setup)
        self.token = next(line.split()[1] for line in out.splitlines() if line.startswith("TOKEN"))
        self.port = free_port()
        logs = self.var / "log"
        logs.mkdir(parents=True, exist_ok=True)
        workers, threads = self.web
        self.commands["web"] = [
            str(BIN / "gunicorn"),
            "config.wsgi",
            "--bind",
            f"127.0.0.1:{self.port}",
            "--workers",
            str(workers),
            "--threads",
            str(threads),
            "--error-logfile",
            str(logs / "web.log"),
        ]
        celery = [str(BIN / "celery"), "-A", "config"]
        quiet = ["--without-gossip", "--without-mingle", "-l", "WARNING"]
        self.commands["worker"] = [
            *celery, "worker", "-Q", self.queue, "-c", str(self.concurrency),
            "-n", f"{self.queue}@%h", *quiet, "--logfile", str(logs / "worker.log"),
        ]  # fmt: skip
        if self.control:
            self.commands["control"] = [
                *celery, "worker", "-Q", f"{self.queue}-control", "-c", "1",
                "-n", f"control-{self.queue}@%h", *quiet, "--logfile", str(logs / "control.log"),
            ]  # fmt: skip
            self.commands["beat"] = [
                *celery, "beat", "-l", "WARNING", "-s", str(self.var / "beat-schedule"),
                "--logfile", str(logs / "beat.log"),
            ]  # fmt: skip
        for role in self.commands:
            self.spawn(role)
        import django

        django.setup()
        from jobs.tasks import noop_task

        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise TimeoutError("the web server did not start") from None
                time.sleep(0.1)
        noop_task.apply_async(queue=self.queue).get(timeout=60)  # the worker is up

    def spawn(self, role: str) -> None:
        """Start one role's process (again, after a fault), in a process group of its own."""
        self.procs[role] = subprocess.Popen(
            self.commands[role], cwd=ROOT, env=self.env, start_new_session=True
        )

    def kill(self, role: str) -> None:
        """SIGKILL a role's main process, then what it left in its group (as make run does)."""
        proc = self.procs[role]
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """One REST call with the bench token: (status, decoded body or None)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            conn.request(
                method,
                path,
                json.dumps(body) if body is not None else None,
                {"Authorization": f"Token {self.token}", "Content-Type": "application/json"},
            )
            response = conn.getresponse()
            raw = response.read()
        finally:
            conn.close()
        try:
            return response.status, json.loads(raw)
        except ValueError:
            return response.status, None

    def submit(self, body: dict[str, Any]) -> tuple[int, float]:
        """POST a job; returns its id and the client-side time the request was sent."""
        sent = time.time()
        status, payload = self.request("POST", "/api/v1/jobs/", body)
        if status != 201:
            raise RuntimeError(f"submit failed: {status} {payload}")
        return payload["id"], sent

    def __exit__(self, *exc: object) -> None:
        for proc in self.procs.values():
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
        if self.slurm is not None:
            self.slurm.stop()
        with contextlib.suppress(Exception):  # Django may not have been set up
            from django.db import connections

            connections.close_all()
        subprocess.run(
            [
                "psql",
                f"{self.pg}/postgres",
                "-qc",
                f"DROP DATABASE IF EXISTS {self.dbname} WITH (FORCE)",
            ],
            check=False,
        )
        subprocess.run(["rm", "-rf", str(self.var)], check=False)
