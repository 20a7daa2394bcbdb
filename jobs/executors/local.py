"""Run the stack runner as a local subprocess, in a sandbox where one starts.

Used by the embedded default, development and tests, and wherever no container
engine answers. Sandboxed (jobs/executors/sandbox.py), each job gets a sandbox of
its own: it sees only its inputs, its out folder and the tools, as a uid of its own,
without network, and whatever it started dies with it. The sandbox starts one of two
ways, from one mount plan (ROCPATH_LOCAL_SANDBOX_RUNNER): forked from the sandboxed
zygote, whose child builds the job's namespaces, mounts and uid itself before the job
runs with the stack already imported (stack/zygote.py, stack/sandbox.py; the default,
about twice the dispatch rate), or a fresh interpreter under bwrap and setpriv (also
the fallback when the zygote cannot start; a sandbox that cannot be built is never
fallen back from: the job errors). Where no sandbox can start, kinds that read a
team's code refuse to run unless an operator allows it (ROCPATH_LOCAL_UNSANDBOXED);
others run as before: in a process group of their own (what cancel and timeout kill,
so tools the runner started die with it), forked from the zygote or a fresh
interpreter. PR_SET_PDEATHSIG makes the runner die with its worker either way.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import resource
import select
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
    log,
)
from jobs.executors.sandbox import (
    SANDBOX_TMP,
    Limits,
    bwrap_argv,
    layout_for,
    limits_for,
    own,
    read_child_pid,
    sandbox_problem,
    sandbox_request,
    tools,
)
from stack import contract
from stack.kinds import KINDS
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


def _sandbox_child_setup(limits: Limits) -> None:
    """Runs in bwrap's process between fork and exec."""
    if _die_with_parent is not None:
        _die_with_parent()
    limits.apply()


def _kill_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def visible_devices(hardware: dict) -> dict[str, str]:
    """The variables that show a local runner only the GPUs leased to its job (jobs.leases).

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
                "HOME": str(spec.job_dir),
                "ROCPATH_JOB_ID": str(spec.job_id),
            }
        )
        if spec.cache_dir is not None:
            env["ROCPATH_CACHE_DIR"] = str(spec.cache_dir)
        env.update(visible_devices(spec.hardware))
        return env

    def sandbox_environment(self, spec: JobSpec) -> dict[str, str]:
        """The job's environment inside its sandbox: HOME and TMPDIR in its private /tmp."""
        env = self.environment(spec)
        env.update(
            {
                "HOME": SANDBOX_TMP,
                "TMPDIR": SANDBOX_TMP,
                "USER": "rocpath-job",
                "LOGNAME": "rocpath-job",
                "PYTHONDONTWRITEBYTECODE": "1",  # the stack code is read-only
            }
        )
        return env

    def sandboxed(self, spec: JobSpec) -> bool:
        """Whether this job runs in a sandbox; an ExecutorError when it must and cannot."""
        problem = sandbox_problem()
        if problem is None:
            return True
        kind = KINDS.get(spec.kind)
        if kind is not None and kind.takes_source and not settings.ROCPATH_LOCAL_UNSANDBOXED:
            raise ExecutorError(
                f"{spec.kind} jobs run a team's code and this worker cannot sandbox them: "
                f"{problem}. Install bubblewrap (apt-get install bubblewrap) and run the worker "
                "as root, use the docker executor, or let an operator allow unsandboxed local "
                "jobs with ROCPATH_LOCAL_UNSANDBOXED=1."
            )
        return False

    def prepare(self, spec: JobSpec) -> None:
        """Inputs appear in the work folder: bound there in a sandbox, else as links."""
        super().prepare(spec)
        if self.sandboxed(spec):
            for name, path in spec.inputs.items():
                point = spec.work_dir / name
                if path.is_dir():
                    point.mkdir(exist_ok=True)
                else:
                    point.touch()
            uid = layout_for(spec, self._python(), Path(settings.BASE_DIR)).uid
            own(spec.out_dir, uid, uid)
            if spec.cache_dir is not None:
                own(spec.cache_dir, uid, uid)
            return
        for name, path in spec.inputs.items():
            link = spec.work_dir / name
            if not link.is_symlink():
                link.symlink_to(path, target_is_directory=path.is_dir())

    @staticmethod
    def _python() -> str:
        return settings.ROCPATH_STACK_PYTHON or sys.executable

    def execute(self, spec: JobSpec, hooks: ExecutionHooks) -> Outcome:
        argv = self.command(spec)
        runner: Runner | None = None
        if self.sandboxed(spec):
            env = self.sandbox_environment(spec)
            if settings.ROCPATH_LOCAL_SANDBOX_RUNNER == "zygote":
                layout = layout_for(spec, argv[0], Path(settings.BASE_DIR))
                box = sandbox_request(layout, limits_for(spec))
                try:
                    runner = zygote_for(argv[0], env, sandboxed=True).spawn(
                        argv[1:], env, spec.job_dir, None, sandbox=box
                    )
                    runner.mode = f"sandboxed, forked from the zygote, uid {layout.uid}"
                except ZygoteError as exc:
                    logger.warning("sandboxed zygote unavailable, starting bwrap: %s", exc)
            if runner is None:
                runner = SandboxRunner.start(spec, argv, env)
            return self._follow(runner, spec, hooks)
        env = self.environment(spec)
        if settings.ROCPATH_LOCAL_ZYGOTE:
            try:
                runner = zygote_for(argv[0], env).spawn(
                    argv[1:], env, spec.job_dir, spec.memory_limit_bytes
                )
            except ZygoteError as exc:
                logger.warning("zygote unavailable, starting a fresh interpreter: %s", exc)
        if runner is None:
            runner = PopenRunner.start(argv, env, spec.job_dir, spec.memory_limit_bytes)
        return self._follow(runner, spec, hooks)

    def _follow(self, proc: Runner, spec: JobSpec, hooks: ExecutionHooks) -> Outcome:
        outcome = Outcome(pid=proc.pid)
        pgid = proc.pid  # the runner leads its own session and process group
        log(hooks, f"runner started: process group {pgid} ({proc.mode})")
        tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        limit = settings.ROCPATH_EVENT_LINE_MAX_BYTES
        readers = {"stdout": LineReader(limit), "stderr": LineReader(limit)}
        selector = selectors.DefaultSelector()
        selector.register(proc.stdout_fd, selectors.EVENT_READ, "stdout")
        selector.register(proc.stderr_fd, selectors.EVENT_READ, "stderr")
        deadline = time.monotonic() + spec.timeout_s
        next_cancel_check = time.monotonic() + CANCEL_POLL_S
        next_beat = time.monotonic() + settings.ROCPATH_HEARTBEAT_S
        killed_at: float | None = None
        exited_at: float | None = None

        def emit(stream: str, raw: bytes, dropped: int) -> None:
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            if dropped:
                line += f" [rocpath: line cut at {limit} bytes, {dropped} more dropped]"
            elif stream == "stdout":
                event = contract.parse_event(line, strict=False)
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
                    for raw, dropped in readers[stream].finish():
                        emit(stream, raw, dropped)
                    continue
                for raw, dropped in readers[stream].feed(chunk):
                    emit(stream, raw, dropped)
            now = time.monotonic()
            if killed_at is None:
                if now >= deadline:
                    outcome.timed_out = True
                    killed_at = self._terminate(proc)
                elif now >= next_cancel_check:
                    next_cancel_check = now + CANCEL_POLL_S
                    if hooks.should_cancel():
                        outcome.canceled = True
                        killed_at = self._terminate(proc)
            elif now - killed_at > KILL_GRACE_S:
                proc.kill()
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            elif exited_at is not None and now - exited_at > KILL_GRACE_S:
                # The runner is gone but something it started still holds the pipes.
                proc.kill()
            if now >= next_beat:
                next_beat = now + settings.ROCPATH_HEARTBEAT_S
                hooks.heartbeat()

        selector.close()
        proc.close_pipes()
        try:
            returncode = proc.wait(timeout=KILL_GRACE_S if killed_at else 30.0)
        except subprocess.TimeoutExpired:
            proc.kill()
            returncode = proc.wait(timeout=30.0)
        # Whatever the runner left in its group (daemonised tools) goes too.
        proc.kill()
        if returncode < 0:
            outcome.signal = -returncode
        else:
            outcome.exit_code = returncode
        outcome.stderr_tail = list(tail)
        return outcome

    @staticmethod
    def _terminate(proc: Runner) -> float:
        proc.terminate()
        return time.monotonic()


class LineReader:
    """Splits a stream into lines in linear time, each cut at ``limit`` bytes.

    Pieces of a line are kept in a list and joined once, at its end, never per chunk;
    past the limit they are counted, not kept, so one endless line costs no memory.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.parts: list[bytes] = []
        self.kept = 0
        self.dropped = 0

    def _add(self, piece: bytes) -> None:
        room = self.limit - self.kept
        if room > 0:
            self.parts.append(piece[:room])
            self.kept += min(room, len(piece))
        self.dropped += max(0, len(piece) - max(room, 0))

    def _end(self) -> tuple[bytes, int]:
        line = (b"".join(self.parts), self.dropped)
        self.parts, self.kept, self.dropped = [], 0, 0
        return line

    def feed(self, chunk: bytes) -> list[tuple[bytes, int]]:
        """The lines this chunk ends, as (bytes kept, bytes dropped)."""
        lines = []
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            self._add(chunk[start:end])
            lines.append(self._end())
            start = end + 1
        self._add(chunk[start:])
        return lines

    def finish(self) -> list[tuple[bytes, int]]:
        """The last line, when the stream ended without a newline."""
        return [self._end()] if self.parts or self.dropped else []


class Runner(Protocol):
    """A started runner process: its pid (= process group), its output pipes, its end."""

    pid: int
    stdout_fd: int
    stderr_fd: int
    mode: str

    def poll(self) -> int | None: ...
    def wait(self, timeout: float) -> int: ...
    def close_pipes(self) -> None: ...
    def terminate(self) -> None: ...
    def kill(self) -> None: ...


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

    def terminate(self) -> None:
        _kill_group(self.pid, signal.SIGTERM)

    def kill(self) -> None:
        _kill_group(self.pid, signal.SIGKILL)


class SandboxRunner(PopenRunner):
    """A fresh interpreter in a bubblewrap sandbox of its own (see jobs/executors/sandbox.py).

    The process started here is bwrap, leading the process group; the runner is pid 1
    of the sandbox's pid namespace, in a session of its own. SIGTERM goes to the runner
    itself (through a pidfd, so never to a recycled pid): it writes its result, as
    outside a sandbox. SIGKILL goes to both; with the runner gone the kernel kills
    everything else in its namespace, and bwrap's children die with bwrap.
    """

    mode = "sandboxed"

    def __init__(self, proc: subprocess.Popen, child_pid: int | None, uid: int) -> None:
        super().__init__(proc)
        self.mode = f"sandboxed, uid {uid}"
        self.pidfd: int | None = None
        if child_pid is not None:
            with contextlib.suppress(OSError):
                self.pidfd = os.pidfd_open(child_pid)

    @classmethod
    def start(cls, spec: JobSpec, command: list[str], env: dict[str, str]) -> SandboxRunner:
        bwrap, setpriv = tools()
        if bwrap is None or setpriv is None:
            raise ExecutorError("could not start the runner: bwrap or setpriv is gone")
        layout = layout_for(spec, command[0], Path(settings.BASE_DIR))
        info_r, info_w = os.pipe()
        argv = bwrap_argv(bwrap, setpriv, layout, command)
        argv[1:1] = ["--info-fd", str(info_w)]
        limits = limits_for(spec)
        try:
            proc = subprocess.Popen(
                argv,
                cwd="/",
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(info_w,),
                start_new_session=True,
                preexec_fn=lambda: _sandbox_child_setup(limits),
            )
        except OSError as exc:
            os.close(info_r)
            raise ExecutorError(f"could not start the runner: {exc}") from exc
        finally:
            os.close(info_w)
        return cls(proc, read_child_pid(info_r), layout.uid)

    def _signal_child(self, sig: int) -> None:
        if self.pidfd is not None:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self.pidfd, sig)

    def terminate(self) -> None:
        if self.pidfd is None:
            _kill_group(self.pid, signal.SIGTERM)  # no pid for the runner: bwrap, and all, go
        self._signal_child(signal.SIGTERM)

    def kill(self) -> None:
        self._signal_child(signal.SIGKILL)
        _kill_group(self.pid, signal.SIGKILL)

    def close_pipes(self) -> None:
        super().close_pipes()
        if self.pidfd is not None:
            with contextlib.suppress(OSError):
                os.close(self.pidfd)
            self.pidfd = None


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
        self,
        argv: list[str],
        env: dict[str, str],
        cwd: Path,
        memory_limit: int | None,
        sandbox: dict | None = None,
    ) -> ZygoteRunner:
        """Start ``python ARGV`` as a child of the zygote; in ``sandbox`` when given.

        A sandboxed child says "ready" on a pipe of its own once its sandbox is built, or
        why it could not be: then SandboxSetupError, and nothing of the job ran.
        """
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        devnull = os.open(os.devnull, os.O_RDONLY)
        fds = [devnull, out_w, err_w]
        request = {"argv": argv, "env": env, "cwd": str(cwd), "memory_limit": memory_limit}
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
            answer = _read_status(status_r, timeout=30.0)
            if answer != b"ready":
                runner.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    runner.wait(timeout=KILL_GRACE_S)
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


def _read_status(fd: int, timeout: float) -> bytes:
    """All a sandboxed child wrote on its status pipe until it closed it (or the timeout)."""
    data = b""
    deadline = time.monotonic() + timeout
    try:
        while (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                break
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            data += chunk
    finally:
        os.close(fd)
    return data


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

    def terminate(self) -> None:
        _kill_group(self.pid, signal.SIGTERM)

    def kill(self) -> None:
        _kill_group(self.pid, signal.SIGKILL)


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
