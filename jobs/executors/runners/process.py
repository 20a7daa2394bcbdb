"""Runner processes: what each way of starting a local runner shares, and a fresh
interpreter per job, bare (PopenRunner) or under bubblewrap (SandboxRunner).

Every runner is a process group whose output is on two pipes, a ``Started`` that the
one follow loop (jobs/executors/base.py) drives: its pipes are read as they come,
stop() sends SIGTERM and SIGKILL follows after KILL_GRACE_S, and once the output has
ended what the runner left in its group is killed too. PR_SET_PDEATHSIG makes every
runner die with its worker.
"""

from __future__ import annotations

import contextlib
import logging
import os
import resource
import selectors
import signal
import subprocess
import time
from abc import abstractmethod
from pathlib import Path

from django.conf import settings

from jobs.executors.base import ExecutorError, JobSpec, Outcome, Started
from jobs.executors.outwatch import OutWatch
from jobs.executors.sandbox import (
    MIB,
    Limits,
    bwrap_argv,
    layout_for,
    limits_for,
    read_child_pid,
    tools,
)
from stack import cgroup, seccomp
from stack.tools import make_die_with_parent

logger = logging.getLogger(__name__)

KILL_GRACE_S = 5.0

_die_with_parent = make_die_with_parent()  # libc loaded once, not in every child


def child_setup(memory_limit: int | None, cgroup_procs: str | None = None) -> None:
    """Runs in the child between fork and exec: the job's cgroup is joined first, so that
    nothing of the job runs outside it."""
    if cgroup_procs:
        cgroup.join(cgroup_procs)
    if _die_with_parent is not None:
        _die_with_parent()
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if memory_limit:
        resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))


def _sandbox_child_setup(limits: Limits, cgroup_procs: str | None) -> None:
    """Runs in bwrap's process between fork and exec (bwrap and the job inherit the group)."""
    if cgroup_procs:
        cgroup.join(cgroup_procs)
    if _die_with_parent is not None:
        _die_with_parent()
    limits.apply()


def kill_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


class Runner(Started):
    """A started runner process: its pid (= process group), its output pipes, its end.

    Each way of starting one supplies poll / wait_exit / close_pipes / terminate / kill;
    the steps the follow loop calls (read, stop, check, wait) are the same for all.
    """

    pid: int
    stdout_fd: int
    stderr_fd: int
    mode: str
    _selector: selectors.BaseSelector | None = None
    _stopped_at: float | None = None  # when stop() sent SIGTERM
    _exited_at: float | None = None  # when the runner itself was seen gone
    _watch: OutWatch | None = None
    memory_group: cgroup.JobGroup | None = None  # the memory cgroup holding the job, where one does

    def watch_out(self, spec: JobSpec) -> None:
        """Kill the runner's group the moment its out folder goes over its caps, as the
        docker engine does a container's (a local job wrote 310 MiB past a 64 MiB cap
        before ingest refused it)."""
        self._watch = OutWatch(spec, kill=self.kill)
        self._watch.start()

    @abstractmethod
    def poll(self) -> int | None: ...
    @abstractmethod
    def wait_exit(self, timeout: float) -> int: ...
    @abstractmethod
    def close_pipes(self) -> None: ...
    @abstractmethod
    def terminate(self) -> None: ...
    @abstractmethod
    def kill(self) -> None: ...

    def read(self, timeout: float) -> list[tuple[str, bytes]] | None:
        if self._selector is None:
            self._selector = selectors.DefaultSelector()
            self._selector.register(self.stdout_fd, selectors.EVENT_READ, "stdout")
            self._selector.register(self.stderr_fd, selectors.EVENT_READ, "stderr")
        if not self._selector.get_map():
            return None
        chunks = []
        for key, _ in self._selector.select(timeout=timeout):
            chunk = os.read(key.fd, 65536)
            if not chunk:
                self._selector.unregister(key.fileobj)
            chunks.append((key.data, chunk))
        return chunks

    def stop(self) -> None:
        self.terminate()
        self._stopped_at = time.monotonic()

    def check(self, now: float) -> str:
        if self._stopped_at is not None and now - self._stopped_at > KILL_GRACE_S:
            self.kill()
        if self._exited_at is None and self.poll() is not None:
            self._exited_at = now
        elif self._exited_at is not None and now - self._exited_at > KILL_GRACE_S:
            # The runner is gone but something it started still holds the pipes.
            self.kill()
        return self._watch.problem if self._watch is not None else ""

    def wait(self, outcome: Outcome) -> None:
        if self._watch is not None:
            self._watch.stop()
            if self._watch.problem:  # the watch killed it: that is why it ended
                outcome.limit_exceeded = self._watch.final_problem()
        if self._selector is not None:
            self._selector.close()
        self.close_pipes()
        try:
            returncode = self.wait_exit(KILL_GRACE_S if self._stopped_at else 30.0)
        except subprocess.TimeoutExpired:
            self.kill()
            returncode = self.wait_exit(30.0)
        # Whatever the runner left in its group (daemonised tools) goes too.
        self.kill()
        outcome.pid = self.pid
        if returncode < 0:
            outcome.signal = -returncode
        else:
            outcome.exit_code = returncode
        self._end_cgroup(outcome, returncode)

    def _end_cgroup(self, outcome: Outcome, returncode: int) -> None:
        """Whether the OOM killer ended the job (a job that still succeeded was not ended
        by it), then the group goes with anything left in it."""
        group = self.memory_group
        if group is None:
            return
        outcome.memory_limit_mb = group.limit // MIB
        if (peak := group.peak()) is not None:
            outcome.memory_peak_mb = -(-peak // MIB)  # rounded up: never under what it held
        if returncode != 0 and group.oom_kills():
            outcome.oom_killed = True
        try:
            group.remove()
        except cgroup.CgroupError as exc:
            logger.warning("job cgroup left behind: %s", exc)


class PopenRunner(Runner):
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
        cls,
        argv: list[str],
        env: dict[str, str],
        cwd: Path,
        memory_limit: int | None,
        cgroup_procs: str | None = None,
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
                preexec_fn=lambda: child_setup(memory_limit, cgroup_procs),
            )
        except subprocess.SubprocessError as exc:  # preexec_fn raised: no more is said
            raise ExecutorError(
                "could not start the runner: its set-up between fork and exec failed "
                f"(joining its memory cgroup {cgroup_procs or '(none)'}, or its rlimits)"
            ) from exc
        except OSError as exc:
            raise ExecutorError(f"could not start the runner: {exc}") from exc
        return cls(proc)

    def poll(self) -> int | None:
        return self.proc.poll()

    def wait_exit(self, timeout: float) -> int:
        return self.proc.wait(timeout=timeout)

    def close_pipes(self) -> None:
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()

    def terminate(self) -> None:
        kill_group(self.pid, signal.SIGTERM)

    def kill(self) -> None:
        kill_group(self.pid, signal.SIGKILL)


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
    def start(
        cls,
        spec: JobSpec,
        command: list[str],
        env: dict[str, str],
        group: cgroup.JobGroup | None = None,
    ) -> SandboxRunner:
        bwrap, setpriv = tools()
        if bwrap is None or setpriv is None:
            raise ExecutorError("could not start the runner: bwrap or setpriv is gone")
        layout = layout_for(spec, command[0], Path(settings.BASE_DIR))
        try:
            program = seccomp.bpf()
        except seccomp.SeccompError as exc:
            raise ExecutorError(f"could not build the sandbox's seccomp filter: {exc}") from exc
        filter_r, filter_w = os.pipe()
        os.write(filter_w, program)  # a few hundred bytes: the pipe holds them
        os.close(filter_w)
        info_r, info_w = os.pipe()
        argv = bwrap_argv(bwrap, setpriv, layout, command, seccomp_fd=filter_r)
        argv[1:1] = ["--info-fd", str(info_w)]
        limits = limits_for(spec, grouped=group is not None)
        procs = group.procs if group is not None else None
        try:
            proc = subprocess.Popen(
                argv,
                cwd="/",
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(info_w, filter_r),
                start_new_session=True,
                preexec_fn=lambda: _sandbox_child_setup(limits, procs),
            )
        except (OSError, subprocess.SubprocessError) as exc:
            os.close(info_r)
            raise ExecutorError(f"could not start the runner: {exc}") from exc
        finally:
            os.close(info_w)
            os.close(filter_r)
        return cls(proc, read_child_pid(info_r), layout.uid)

    def _signal_child(self, sig: int) -> None:
        if self.pidfd is not None:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self.pidfd, sig)

    def terminate(self) -> None:
        if self.pidfd is None:
            kill_group(self.pid, signal.SIGTERM)  # no pid for the runner: bwrap, and all, go
        self._signal_child(signal.SIGTERM)

    def kill(self) -> None:
        self._signal_child(signal.SIGKILL)
        kill_group(self.pid, signal.SIGKILL)

    def close_pipes(self) -> None:
        super().close_pipes()
        if self.pidfd is not None:
            with contextlib.suppress(OSError):
                os.close(self.pidfd)
            self.pidfd = None
