"""The worker's side of the zygote (stack/zygote.py): one warm interpreter per worker
process, forking a runner per job, sandboxed or not; what it forks is a ``Runner``."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from django.conf import settings

from jobs.executors.base import ExecutorError
from jobs.executors.runners.process import KILL_GRACE_S, Runner, child_setup
from jobs.executors.sandbox import SANDBOX_TMP
from stack.zygote import read_until_closed


class ZygoteError(Exception):
    """The zygote could not start a runner; the caller falls back to a fresh interpreter."""


class SandboxSetupError(ExecutorError):
    """The sandboxed zygote's child could not build the job's sandbox: the job never ran."""


def zygote_environment() -> dict[str, str]:
    """The sandboxed zygote's own environment: no job's (every child's /proc/self/environ
    shows it), only what the interpreter needs to start."""
    env = {key: os.environ[key] for key in ("PATH", "LANG", "LC_ALL", "TZ") if key in os.environ}
    env.update(
        {
            "PYTHONPATH": str(Path(settings.BASE_DIR)),
            "PYTHONUNBUFFERED": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            "HOME": SANDBOX_TMP,
        }
    )
    return env


class Zygote:
    """One warm ``python -m stack.zygote`` per worker process (see stack/zygote.py).

    Sandboxed, it is started with an environment of its own (no job's) and each of its
    children builds its job's sandbox before the job runs (stack/sandbox.py).
    """

    def __init__(self, python: str, env: dict[str, str], sandboxed: bool = False) -> None:
        self.owner = os.getpid()
        self.python = python
        self.sandboxed = sandboxed
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        command = [python, "-m", "stack.zygote", "--fd", str(theirs.fileno())]
        if sandboxed:
            command.append("--sandboxed")
            env = zygote_environment()
        try:
            self.proc = subprocess.Popen(
                command,
                env={**env, "ROCPATH_JOB_ID": ""},
                cwd=str(settings.BASE_DIR),
                stdin=subprocess.DEVNULL,
                pass_fds=[theirs.fileno()],
                preexec_fn=lambda: child_setup(None),
            )
        except OSError as exc:
            ours.close()
            raise ZygoteError(f"cannot start the zygote: {exc}") from exc
        finally:
            theirs.close()
        self.sock = ours
        self.exited: dict[int, int] = {}

    def alive(self) -> bool:
        return self.owner == os.getpid() and self.proc.poll() is None

    def _receive(self, timeout: float | None) -> dict | None:
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(65536)
        except (TimeoutError, BlockingIOError):
            return None
        except OSError as exc:
            raise ZygoteError(f"lost the zygote: {exc}") from exc
        if not data:
            raise ZygoteError("the zygote exited")
        message = json.loads(data)
        if "exited" in message:
            self.exited[message["exited"]] = message["status"]
        return message

    def spawn(
        self,
        argv: list[str],
        env: dict[str, str],
        cwd: Path,
        memory_limit: int | None,
        sandbox: dict | None = None,
        cgroup_procs: str | None = None,
    ) -> ZygoteRunner:
        """Start ``python ARGV`` as a child of the zygote; in ``sandbox`` when given.

        A sandboxed child says "ready" on a pipe of its own once its sandbox is built, or
        why it could not be: then SandboxSetupError, and nothing of the job ran.
        """
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        devnull = os.open(os.devnull, os.O_RDONLY)
        fds = [devnull, out_w, err_w]
        request = {
            "argv": argv,
            "env": env,
            "cwd": str(cwd),
            "memory_limit": memory_limit,
            "cgroup": cgroup_procs,
        }
        status_r = None
        if sandbox is not None:
            status_r, status_w = os.pipe()
            fds.append(status_w)
            request["sandbox"] = sandbox
        try:
            socket.send_fds(self.sock, [json.dumps(request).encode()], fds)
            deadline = time.monotonic() + 10
            while True:
                message = self._receive(max(0.01, deadline - time.monotonic()))
                if message is None and time.monotonic() >= deadline:
                    raise ZygoteError("the zygote did not answer within 10 s")
                if message and "started" in message:
                    pid = int(message["started"])
                    break
                if message and "error" in message:
                    raise ZygoteError(message["error"])
        except (OSError, ZygoteError) as exc:
            for fd in (out_r, err_r, status_r):
                if fd is not None:
                    os.close(fd)
            raise ZygoteError(str(exc)) from exc
        finally:
            for fd in fds:
                os.close(fd)
        runner = ZygoteRunner(self, pid, out_r, err_r)
        if status_r is not None:
            answer = read_until_closed(status_r, timeout=30.0)
            if answer != b"ready":
                runner.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    runner.wait_exit(KILL_GRACE_S)
                runner.close_pipes()
                reason = answer.decode("utf-8", "replace") or (
                    f"its process ended during set-up (exit {runner.returncode})"
                )
                raise SandboxSetupError(f"the job's sandbox could not be built: {reason}")
        return runner

    def close(self) -> None:
        self.sock.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)


class ZygoteRunner(Runner):
    mode = "forked from the zygote"

    def __init__(self, zygote: Zygote, pid: int, stdout_fd: int, stderr_fd: int) -> None:
        self.zygote = zygote
        self.pid = pid
        self.stdout_fd = stdout_fd
        self.stderr_fd = stderr_fd
        self.returncode: int | None = None

    def _collect(self) -> int | None:
        if self.returncode is None and self.pid in self.zygote.exited:
            self.returncode = os.waitstatus_to_exitcode(self.zygote.exited.pop(self.pid))
        return self.returncode

    def poll(self) -> int | None:
        if self._collect() is None:
            try:
                while self.zygote._receive(0) is not None and self._collect() is None:
                    pass
            except ZygoteError:
                self.returncode = -signal.SIGKILL  # the zygote died, and its child with it
        return self.returncode

    def wait_exit(self, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while self._collect() is None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(f"runner {self.pid}", timeout)
            try:
                self.zygote._receive(left)
            except ZygoteError:
                # The zygote is gone, and with it (PR_SET_PDEATHSIG) its child.
                self.returncode = -signal.SIGKILL
        return self.returncode

    def close_pipes(self) -> None:
        for fd in (self.stdout_fd, self.stderr_fd):
            with contextlib.suppress(OSError):
                os.close(fd)

    def _signal(self, sig: int) -> None:
        try:
            os.killpg(self.pid, sig)
        except ProcessLookupError:
            # No group yet: the child has not reached setsid, so it is alive and unreaped
            # (a kill right after spawn went nowhere, and the job ran its course).
            if self._collect() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, sig)
        except PermissionError:
            pass

    def terminate(self) -> None:
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        self._signal(signal.SIGKILL)


_zygotes: dict[bool, Zygote] = {}  # one per worker process and kind (sandboxed or not)


def zygote_for(python: str, env: dict[str, str], sandboxed: bool = False) -> Zygote:
    """This worker process's zygote, started (again) when missing or dead."""
    zygote = _zygotes.get(sandboxed)
    if zygote is not None and (zygote.python != python or not zygote.alive()):
        if zygote.owner == os.getpid():
            zygote.close()
        zygote = None
    if zygote is None:
        zygote = _zygotes[sandboxed] = Zygote(python, env, sandboxed)
    return zygote
