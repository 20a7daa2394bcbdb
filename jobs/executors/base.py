"""The executor interface: run one job's runner and say how it ended.

An executor knows how to start ``python -m stack run`` somewhere (a local
process group, a container, ...) and nothing about the database: it talks to
the caller through an ``ExecutionHooks`` object (stream lines, ask whether to
cancel, beat). The steps are fixed (prepare, start, follow, cleanup); engines
override the ones they need. Following a started runner is one loop for every
engine (``follow``: the deadline, the cancel poll, the heartbeat, the stderr tail,
lines cut by ``LineSplitter`` and parsed into events); an engine supplies what
differs, as a ``Started``: how its output is read, how it is stopped, how it ended.
"""

from __future__ import annotations

import contextlib
import time
from abc import ABC, abstractmethod
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from django.conf import settings

from stack import contract


class ExecutorError(Exception):
    """The executor could not run the job: the job ends errored with this message.

    ``permanent`` says whether running it again could help. Most cannot (a job that
    asks for more than the worker has, an image that is not there, a sandbox that
    cannot be built), so that is the default; an error of the worker's surroundings
    (a container engine that does not answer) is not permanent, and the job is queued
    again, a bounded number of times (jobs.services.run).
    """

    def __init__(self, message: str, *, permanent: bool = True) -> None:
        super().__init__(message)
        self.permanent = permanent


@dataclass(frozen=True)
class JobSpec:
    """What an executor needs to know about a job, without the ORM."""

    job_id: int
    kind: str
    job_dir: Path  # the job's folder: params.json (read-only input), work/ and out/
    timeout_s: int
    image: str = ""
    hardware: dict = field(default_factory=dict)
    worker: str = ""
    attempt: int = 1
    # Read-only inputs, each placed at <work>/<name>: e.g. {"src": <the source tree>}.
    inputs: dict[str, Path] = field(default_factory=dict)
    # A writable folder that outlives the job (per-project caches), or None.
    cache_dir: Path | None = None

    @property
    def memory_limit_bytes(self) -> int | None:
        """The memory the job asked to be held to (``hardware.memory_mb``), if it asked."""
        memory_mb = self.hardware.get("memory_mb")
        return int(memory_mb) * 1024 * 1024 if memory_mb else None

    @property
    def params_file(self) -> Path:
        return self.job_dir / "params.json"

    @property
    def work_dir(self) -> Path:
        return self.job_dir / "work"

    @property
    def out_dir(self) -> Path:
        return self.job_dir / "out"


# How often a running job's worker asks whether it was canceled, how many stderr lines
# it keeps for the error text, and how long it waits for output before it looks at the
# clock again: the same for every executor.
CANCEL_POLL_S = 0.5
STDERR_TAIL_LINES = 40
READ_WAIT_S = 0.1


@dataclass
class Outcome:
    exit_code: int | None = None  # None: never started or no code available
    signal: int | None = None  # set when the runner died of a signal we did not send
    timed_out: bool = False
    canceled: bool = False
    pid: int | None = None  # the runner's process (group) id, where there is one
    oom_killed: bool = False  # the kernel killed it for exceeding its memory limit
    memory_limit_mb: int | None = None  # the limit it was held to, where one was set
    memory_peak_mb: int | None = None  # the most its processes held together, where known
    image: str = ""  # the container image that ran, where one did
    image_digest: str = ""  # its content address (image id / repo digest)
    stderr_tail: list[str] = field(default_factory=list)
    # Set when the worker stopped the job for going over a limit (its out folder's size):
    # the job ends errored with this text and nothing it left is read.
    limit_exceeded: str = ""
    # Set when the engine's scheduler, not the runner, ended the job (Slurm: a failed node,
    # a cancel from outside rocpath, its own time or memory limit, a job that vanished):
    # the job ends errored with this text, the real cause, and nothing it left is read.
    lost: str = ""


class ExecutionHooks(Protocol):
    def on_event(self, event: dict) -> None: ...
    def on_line(self, line: str, stream: str) -> None: ...
    def should_cancel(self) -> bool: ...
    def heartbeat(self) -> None: ...


class LineSplitter:
    """Cuts a byte stream into lines in linear time, each at most ``max_bytes`` long.

    Chunks are scanned once for newlines; a partial line is kept as a list of pieces
    (never re-joined per chunk), and a line that goes past the cap is handed out at
    the cap, marked, and the rest of it up to its newline is skipped unread.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.pieces: list[bytes] = []
        self.held = 0  # bytes in pieces
        self.skipping = False  # inside a line already handed out, cut

    def _line(self, tail: bytes = b"", *, cut: bool = False) -> str:
        raw = b"".join([*self.pieces, tail])
        self.pieces, self.held = [], 0
        text = raw.decode("utf-8", errors="replace").rstrip("\r")
        return f"{text} [line cut at {self.max_bytes} bytes]" if cut else text

    def feed(self, chunk: bytes) -> list[str]:
        lines: list[str] = []
        start = 0
        while start < len(chunk):
            end = chunk.find(b"\n", start)
            stop = len(chunk) if end < 0 else end
            if self.skipping:
                if end >= 0:
                    self.skipping = False
            else:
                room = self.max_bytes - self.held
                if stop - start > room:
                    lines.append(self._line(chunk[start : start + room], cut=True))
                    self.skipping = end < 0
                elif end >= 0:
                    lines.append(self._line(chunk[start:end]))
                else:
                    self.pieces.append(chunk[start:])
                    self.held += len(chunk) - start
            start = stop + 1
        return lines

    def close(self) -> list[str]:
        """The last line, when the stream did not end with a newline."""
        return [self._line()] if self.pieces else []


def log(hooks: ExecutionHooks, message: str, level: str = "info") -> None:
    """Add a line of the worker's own to the job's live log, as a runner's log event."""
    hooks.on_event(contract.log_event(message, level))


class Started(ABC):
    """A runner an engine started, as the follow loop drives it."""

    @abstractmethod
    def read(self, timeout: float) -> list[tuple[str, bytes]] | None:
        """Output that came within ``timeout`` as ("stdout" | "stderr", bytes) pairs, b""
        when that stream ended; None once every stream has ended."""

    @abstractmethod
    def stop(self) -> None:
        """Ask the runner to end (timeout, cancel) so that it can still write its result;
        the engine makes sure it ends (SIGKILL after a grace period)."""

    def check(self, now: float) -> str:
        """The engine's own checks on each pass: why the job was stopped for going over
        a limit (the engine stopped it already), or ''."""
        return ""

    @abstractmethod
    def wait(self, outcome: Outcome) -> None:
        """Once its output has ended: reap the runner and write how it ended into outcome."""


def follow(started: Started, spec: JobSpec, hooks: ExecutionHooks) -> Outcome:
    """Stream a started runner's output into the hooks until it ends, and say how it ended.

    stdout lines that are events go to ``on_event``, other lines to ``on_line``; each
    line is at most ROCPATH_EVENT_LINE_MAX_BYTES. The runner is stopped at its deadline
    or when the job was canceled, and the worker beats every ROCPATH_HEARTBEAT_S.
    """
    try:
        return _follow(started, spec, hooks)
    except BaseException:
        # A hook raised (the database went away mid-job, the task is killed): the runner
        # must not outlive the loop that follows it, or a retry would run the job twice.
        started.stop()
        with contextlib.suppress(Exception):
            started.wait(Outcome())
        raise


def _follow(started: Started, spec: JobSpec, hooks: ExecutionHooks) -> Outcome:
    outcome = Outcome()
    limit = settings.ROCPATH_EVENT_LINE_MAX_BYTES
    beat_every = settings.ROCPATH_HEARTBEAT_S
    splitters = {"stdout": LineSplitter(limit), "stderr": LineSplitter(limit)}
    tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
    now = time.monotonic()
    deadline = now + spec.timeout_s
    next_cancel_check = now + CANCEL_POLL_S
    next_beat = now + beat_every
    stopping = False
    while (chunks := started.read(READ_WAIT_S)) is not None:
        for stream, chunk in chunks:
            splitter = splitters[stream]
            for line in splitter.feed(chunk) if chunk else splitter.close():
                if stream == "stdout":
                    event = contract.parse_event(line, strict=False)
                    if event is not None:
                        hooks.on_event(event)
                        continue
                elif line:
                    tail.append(line)
                if line:
                    hooks.on_line(line, stream)
        now = time.monotonic()
        if not stopping:
            if now >= deadline:
                outcome.timed_out = stopping = True
                started.stop()
            elif now >= next_cancel_check:
                next_cancel_check = now + CANCEL_POLL_S
                if hooks.should_cancel():
                    outcome.canceled = stopping = True
                    started.stop()
        if (problem := started.check(now)) and not stopping:
            outcome.limit_exceeded = problem
            stopping = True
        if now >= next_beat:
            next_beat = now + beat_every
            hooks.heartbeat()
    started.wait(outcome)
    outcome.stderr_tail = list(tail)
    if outcome.memory_peak_mb is not None:  # what to set a tighter limit from, or a larger
        log(
            hooks,
            f"memory: its processes held at most {outcome.memory_peak_mb} MiB together "
            f"(limit {outcome.memory_limit_mb} MiB)",
        )
    return outcome


class Executor(ABC):
    name: str = ""
    # True for an engine whose scheduler gives jobs their GPUs itself (Slurm's --gres): the
    # worker then holds no GPU lease of its own for the job (jobs.leases).
    allocates_gpus: bool = False

    def prepare(self, spec: JobSpec) -> None:
        """Make the out and work folders; engines add their own set-up (inputs, image, ...)."""
        spec.out_dir.mkdir(parents=True, exist_ok=True)
        spec.work_dir.mkdir(parents=True, exist_ok=True)
        if spec.cache_dir is not None:
            spec.cache_dir.mkdir(parents=True, exist_ok=True)

    @abstractmethod
    def start(self, spec: JobSpec, hooks: ExecutionHooks) -> Started:
        """Start the job's runner (and say so in its log)."""

    def execute(self, spec: JobSpec, hooks: ExecutionHooks) -> Outcome:
        return follow(self.start(spec, hooks), spec, hooks)

    def cleanup(self, spec: JobSpec) -> None:  # noqa: B027 - optional step
        """Release what execute() left behind (containers, ...)."""

    def run(self, spec: JobSpec, hooks: ExecutionHooks) -> Outcome:
        self.prepare(spec)
        try:
            return self.execute(spec, hooks)
        finally:
            self.cleanup(spec)
