"""Run the stack runner as a local subprocess in a process group of its own.

Used by the embedded default, development and tests, and wherever no container
engine answers. The group is what cancel and timeout kill, so tools the runner
started die with it; PR_SET_PDEATHSIG makes the runner die with its worker.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import resource
import selectors
import signal
import socket
import subprocess
import sys
import time
from collections import deque
from pathlib import Path
from typing import Protocol

from django.conf import settings

from jobs.executors.base import (
    CANCEL_POLL_S,
    STDERR_TAIL_LINES,
    ExecutionHooks,
    Executor,
    ExecutorError,
    JobSpec,
    Outcome,
    parse_stdout_line,
)
from stack.tools import make_die_with_parent

logger = logging.getLogger(__name__)

KILL_GRACE_S = 5.0

_die_with_parent = make_die_with_parent()  # libc loaded once, not in every child

# Environment variables a job may inherit from the worker: tool lookup and GPU
# selection, never the worker's secrets (DATABASE_URL, SECRET_KEY, ...).
PASS_ENV = (
    "PATH",
    "LANG",
    "LC_ALL",
    "TZ",
    "ROCM_PATH",
    "HIP_PATH",
    "CUDA_HOME",
    "LD_LIBRARY_PATH",
    "ROCR_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "CUDA_VISIBLE_DEVICES",
    "OPENBLAS_CORETYPE",
    "OPENBLAS_L2_SIZE",
)


def _child_setup(memory_limit: int | None) -> None:
    """Runs in the child between fork and exec."""
    if _die_with_parent is not None:
        _die_with_parent()
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if memory_limit:
        resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))


def _kill_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def visible_devices(hardware: dict) -> dict[str, str]:
    """The variables that show a local runner only the GPUs leased to its job (jobs.gpus).

    Indices are the host's, in the inventory's order: nvidia-smi's, which is PCI
    bus order (hence CUDA_DEVICE_ORDER); for AMD the probe's (amd-smi, else rocm-smi
    or rocminfo), taken to match ROCr's own numbering, both being PCI bus order on
    the hosts we know of (not checked on an AMD GPU here). They replace whatever
    the worker's own environment said.
    """
    indices = hardware.get("gpu_indices")
    if not indices:
        return {}
    listed = ",".join(str(i) for i in indices)
    if hardware.get("gpu_vendor") == "nvidia":
        return {"CUDA_VISIBLE_DEVICES": listed, "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    if hardware.get("gpu_vendor") == "amd":
        # ROCr picks by host index; HIP then numbers what ROCr shows from 0
        inside = ",".join(str(i) for i in range(len(indices)))
        return {"ROCR_VISIBLE_DEVICES": listed, "HIP_VISIBLE_DEVICES": inside}
    return {}


class LocalExecutor(Executor):
    name = "local"

    def command(self, spec: JobSpec) -> list[str]:
        python = settings.ROCPATH_STACK_PYTHON or sys.executable
        return [
            python,
            "-m",
            "stack",
            "run",
            spec.kind,
            "--params",
            str(spec.params_file),
            "--out",
            str(spec.out_dir),
            "--work",
            str(spec.work_dir),
        ]

    def environment(self, spec: JobSpec) -> dict[str, str]:
        env = {key: os.environ[key] for key in PASS_ENV if key in os.environ}
        env.update(
            {
                "PYTHONPATH": str(Path(settings.BASE_DIR)),
                "PYTHONUNBUFFERED": "1",
                "HOME": str(spec.workdir),
                "ROCPATH_JOB_ID": str(spec.job_id),
            }
        )
        if spec.cache_dir is not None:
            env["ROCPATH_CACHE_DIR"] = str(spec.cache_dir)
        env.update(visible_devices(spec.hardware))
        return env

    def prepare(self, spec: JobSpec) -> None:
        """Inputs appear in the work folder as links to where they are kept."""
        super().prepare(spec)
        for name, path in spec.inputs.items():
            link = spec.work_dir / name
            if not link.is_symlink():
                link.symlink_to(path, target_is_directory=path.is_dir())

    def execute(self, spec: JobSpec, hooks: ExecutionHooks) -> Outcome:
        argv = self.command(spec)
        env = self.environment(spec)
        runner: Runner | None = None
        if settings.ROCPATH_LOCAL_ZYGOTE:
            try:
                runner = zygote_for(argv[0], env).spawn(
                    argv[3:], env, spec.workdir, spec.memory_limit_bytes
                )
            except ZygoteError as exc:
                logger.warning("zygote unavailable, starting a fresh interpreter: %s", exc)
        if runner is None:
            runner = PopenRunner.start(argv, env, spec.workdir, spec.memory_limit_bytes)
        return self._follow(runner, spec, hooks)

    def _follow(self, proc: Runner, spec: JobSpec, hooks: ExecutionHooks) -> Outcome:
        outcome = Outcome(pid=proc.pid)
        pgid = proc.pid  # the runner leads its own session and process group
        hooks.on_event(
            {
                "event": "log",
                "level": "info",
                "message": f"runner started: process group {pgid} ({proc.mode})",
            }
        )
        tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        buffers = {"stdout": b"", "stderr": b""}
        selector = selectors.DefaultSelector()
        selector.register(proc.stdout_fd, selectors.EVENT_READ, "stdout")
        selector.register(proc.stderr_fd, selectors.EVENT_READ, "stderr")
        deadline = time.monotonic() + spec.timeout_s
        next_cancel_check = time.monotonic() + CANCEL_POLL_S
        next_beat = time.monotonic() + settings.ROCPATH_HEARTBEAT_S
        killed_at: float | None = None
        exited_at: float | None = None

        def emit(stream: str, raw: bytes) -> None:
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            if stream == "stdout":
                event = parse_stdout_line(line)
                if event is not None:
                    hooks.on_event(event)
                    return
            elif line:
                tail.append(line)
            if line:
                hooks.on_line(line, stream)

        while selector.get_map():
            for key, _ in selector.select(timeout=0.2):
                stream = key.data
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    selector.unregister(key.fileobj)
                    if buffers[stream]:
                        emit(stream, buffers[stream])
                        buffers[stream] = b""
                    continue
                data = buffers[stream] + chunk
                *lines, buffers[stream] = data.split(b"\n")
                for raw in lines:
                    emit(stream, raw)
            now = time.monotonic()
            if killed_at is None:
                if now >= deadline:
                    outcome.timed_out = True
                    killed_at = self._terminate(pgid)
                elif now >= next_cancel_check:
                    next_cancel_check = now + CANCEL_POLL_S
                    if hooks.should_cancel():
                        outcome.canceled = True
                        killed_at = self._terminate(pgid)
            elif now - killed_at > KILL_GRACE_S:
                _kill_group(pgid, signal.SIGKILL)
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            elif exited_at is not None and now - exited_at > KILL_GRACE_S:
                # The runner is gone but something it started still holds the pipes.
                _kill_group(pgid, signal.SIGKILL)
            if now >= next_beat:
                next_beat = now + settings.ROCPATH_HEARTBEAT_S
                hooks.heartbeat()

        selector.close()
        proc.close_pipes()
        try:
            returncode = proc.wait(timeout=KILL_GRACE_S if killed_at else 30.0)
        except subprocess.TimeoutExpired:
            _kill_group(pgid, signal.SIGKILL)
            returncode = proc.wait(timeout=30.0)
        # Whatever the runner left in its group (daemonised tools) goes too.
        _kill_group(pgid, signal.SIGKILL)
        if returncode < 0:
            outcome.signal = -returncode
        else:
            outcome.exit_code = returncode
        outcome.stderr_tail = list(tail)
        return outcome

    @staticmethod
    def _terminate(pgid: int) -> float:
        _kill_group(pgid, signal.SIGTERM)
        return time.monotonic()


class Runner(Protocol):
    """A started runner process: its pid (= process group), its output pipes, its end."""

    pid: int
    stdout_fd: int
    stderr_fd: int
    mode: str

    def poll(self) -> int | None: ...
    def wait(self, timeout: float) -> int: ...
    def close_pipes(self) -> None: ...


class PopenRunner:
    """A fresh interpreter per job (the fallback, and what a container does)."""

    mode = "fresh interpreter"

    def __init__(self, proc: subprocess.Popen) -> None:
        assert proc.stdout is not None and proc.stderr is not None
        self.proc = proc
        self.pid = proc.pid
        self.stdout_fd = proc.stdout.fileno()
        self.stderr_fd = proc.stderr.fileno()

    @classmethod
    def start(
        cls, argv: list[str], env: dict[str, str], cwd: Path, memory_limit: int | None
    ) -> PopenRunner:
        try:
            proc = subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                preexec_fn=lambda: _child_setup(memory_limit),
            )
        except OSError as exc:
            raise ExecutorError(f"could not start the runner: {exc}") from exc
        return cls(proc)

    def poll(self) -> int | None:
        return self.proc.poll()

    def wait(self, timeout: float) -> int:
        return self.proc.wait(timeout=timeout)

    def close_pipes(self) -> None:
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


class ZygoteError(Exception):
    """The zygote could not start a runner; the caller falls back to a fresh interpreter."""


class Zygote:
    """One warm ``python -m stack.zygote`` per worker process (see stack/zygote.py)."""

    def __init__(self, python: str, env: dict[str, str]) -> None:
        self.owner = os.getpid()
        self.python = python
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = subprocess.Popen(
                [python, "-m", "stack.zygote", "--fd", str(theirs.fileno())],
                env={**env, "ROCPATH_JOB_ID": ""},
                cwd=str(settings.BASE_DIR),
                stdin=subprocess.DEVNULL,
                pass_fds=[theirs.fileno()],
                preexec_fn=lambda: _child_setup(None),
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
        self, argv: list[str], env: dict[str, str], cwd: Path, memory_limit: int | None
    ) -> ZygoteRunner:
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        devnull = os.open(os.devnull, os.O_RDONLY)
        request = {"argv": argv, "env": env, "cwd": str(cwd), "memory_limit": memory_limit}
        try:
            socket.send_fds(self.sock, [json.dumps(request).encode()], [devnull, out_w, err_w])
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
            for fd in (out_r, err_r):
                os.close(fd)
            raise ZygoteError(str(exc)) from exc
        finally:
            for fd in (devnull, out_w, err_w):
                os.close(fd)
        return ZygoteRunner(self, pid, out_r, err_r)

    def close(self) -> None:
        self.sock.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)


class ZygoteRunner:
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

    def wait(self, timeout: float) -> int:
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


_zygote: Zygote | None = None


def zygote_for(python: str, env: dict[str, str]) -> Zygote:
    """This worker process's zygote, started (again) when missing or dead."""
    global _zygote  # one zygote per worker process, by design
    if _zygote is not None and (_zygote.python != python or not _zygote.alive()):
        if _zygote.owner == os.getpid():
            _zygote.close()
        _zygote = None
    if _zygote is None:
        _zygote = Zygote(python, env)
    return _zygote
