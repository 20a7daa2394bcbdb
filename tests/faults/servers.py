"""Private servers for fault injection: a redis-server and a PostgreSQL cluster of our own.

Each listens on a free port of 127.0.0.1 and keeps its files under /tmp, so killing or
restarting it touches nothing but what the test or benchmark started. Used by the fault
suite (tests/faults/conftest.py) and the soak benchmark (bench/soak.py); no Django here.
"""

from __future__ import annotations

import contextlib
import glob
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.waits import START_S

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def port_answers(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
        return True
    return False


@dataclass
class RedisServer:
    """One private redis-server, stopped and started again on the same port."""

    port: int
    folder: Path
    proc: subprocess.Popen | None = None
    appendonly: bool = False  # compose's AOF (everysec) for the soak; none in the tests

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        log = (self.folder / "redis.log").open("a")
        self.proc = subprocess.Popen(
            [
                REDIS_SERVER,
                *("--port", str(self.port), "--bind", "127.0.0.1"),
                *("--save", "", "--appendonly", "yes" if self.appendonly else "no"),
                *("--appendfsync", "everysec", "--dir", str(self.folder)),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + START_S
        while not self.answers():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError((self.folder / "redis.log").read_text()[-2000:])
            time.sleep(0.05)

    def answers(self) -> bool:
        return port_answers(self.port)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """Stop it as an operator or the kernel would: SIGTERM (a clean shutdown) or SIGKILL."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=20)


def _pg_bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if not found:
        raise RuntimeError(f"no PostgreSQL server binaries ({name}) under /usr/lib/postgresql")
    return found[-1]


@dataclass
class PostgresCluster:
    """A throw-away PostgreSQL cluster: initdb'd under /tmp, run as the postgres user.

    Trust authentication on 127.0.0.1 and a unix socket in its own folder; never the
    machine's shared server. `restart("fast")` / `restart("immediate")` are what an
    operator's `pg_ctl restart -m fast` and a crash followed by recovery do to clients.
    """

    port: int = field(default_factory=free_port)
    folder: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="rocpath-pg-")))

    @property
    def data(self) -> Path:
        return self.folder / "data"

    def url(self, dbname: str = "postgres") -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{dbname}"

    def _as_postgres(self, *argv: str) -> None:
        done = subprocess.run(
            ["runuser", "-u", "postgres", "--", *argv],
            capture_output=True,
            text=True,
            check=False,
            timeout=START_S + 30,
        )
        if done.returncode != 0:
            log = self.folder / "postgres.log"
            tail = log.read_text()[-2000:] if log.exists() else ""
            raise RuntimeError(f"{argv[0]} failed: {done.stdout}{done.stderr}\n{tail}")

    def _options(self) -> str:
        return (
            f"-p {self.port} -k {self.folder / 'sock'} -c listen_addresses=127.0.0.1 "
            "-c fsync=off -c max_connections=200"
        )

    def create(self) -> None:
        (self.folder / "sock").mkdir()
        shutil.chown(self.folder, "postgres")
        shutil.chown(self.folder / "sock", "postgres")
        self._as_postgres(
            _pg_bin("initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres",
            "-E", "UTF8", "--no-sync",
        )  # fmt: skip
        self.start()

    def start(self) -> None:
        self._as_postgres(
            _pg_bin("pg_ctl"), "-D", str(self.data), "-l", str(self.folder / "postgres.log"),
            "-o", self._options(), "-w", "-t", str(START_S), "start",
        )  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        """`pg_ctl stop -m fast` (clients told, clean) or `-m immediate` (as a crash)."""
        self._as_postgres(
            _pg_bin("pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "-t",
            str(START_S), "stop",
        )  # fmt: skip

    def restart(self, mode: str) -> None:
        self._as_postgres(
            _pg_bin("pg_ctl"), "-D", str(self.data), "-l", str(self.folder / "postgres.log"),
            "-m", mode, "-o", self._options(), "-w", "-t", str(START_S), "restart",
        )  # fmt: skip

    def answers(self) -> bool:
        return port_answers(self.port)

    def createdb(self, name: str) -> None:
        subprocess.run(["psql", self.url(), "-qc", f"CREATE DATABASE {name}"], check=True)

    def destroy(self) -> None:
        with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
            self.stop("immediate")
        shutil.rmtree(self.folder, ignore_errors=True)
