"""Run the stack runner as a local subprocess in a process group of its own.

Used by the embedded default, development and tests, and wherever no container
engine answers. The group is what cancel and timeout kill, so tools the runner
started die with it; PR_SET_PDEATHSIG makes the runner die with its worker.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import selectors
import signal
import subprocess
import sys
import time
from collections import deque
from pathlib import Path

from django.conf import settings

from jobs.executors.base import (
    ExecutionHooks,
    Executor,
    ExecutorError,
    JobSpec,
    Outcome,
    parse_stdout_line,
)

PR_SET_PDEATHSIG = 1
KILL_GRACE_S = 5.0
CANCEL_POLL_S = 0.5
STDERR_TAIL_LINES = 40

_libc = None
with contextlib.suppress(OSError):
    _libc = ctypes.CDLL(None, use_errno=True)

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
    if _libc is not None:
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if memory_limit:
        resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))


def _kill_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


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
        return env

    def execute(self, spec: JobSpec, hooks: ExecutionHooks) -> Outcome:
        try:
            proc = subprocess.Popen(
                self.command(spec),
                cwd=spec.workdir,
                env=self.environment(spec),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                preexec_fn=lambda: _child_setup(spec.memory_limit_bytes),
            )
        except OSError as exc:
            raise ExecutorError(f"could not start the runner: {exc}") from exc
        return self._follow(proc, spec, hooks)

    def _follow(self, proc: subprocess.Popen, spec: JobSpec, hooks: ExecutionHooks) -> Outcome:
        outcome = Outcome()
        pgid = proc.pid  # start_new_session: the child leads its own group
        tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        buffers = {"stdout": b"", "stderr": b""}
        selector = selectors.DefaultSelector()
        assert proc.stdout is not None and proc.stderr is not None
        selector.register(proc.stdout, selectors.EVENT_READ, "stdout")
        selector.register(proc.stderr, selectors.EVENT_READ, "stderr")
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
        try:
            returncode = proc.wait(timeout=KILL_GRACE_S if killed_at else None)
        except subprocess.TimeoutExpired:
            _kill_group(pgid, signal.SIGKILL)
            returncode = proc.wait()
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
