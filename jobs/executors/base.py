"""The executor interface: run one job's runner and say how it ended.

An executor knows how to start ``python -m stack run`` somewhere (a local
process group, a container, ...) and nothing about the database: it talks to
the caller through an ``ExecutionHooks`` object (stream lines, ask whether to
cancel, beat). The steps are fixed; engines override the ones they need.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from stack import contract


class ExecutorError(Exception):
    """The executor could not run the job: the job ends errored with this message."""


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


# How often a running job's worker asks whether it was canceled, and how many stderr
# lines it keeps for the error text: the same for every executor.
CANCEL_POLL_S = 0.5
STDERR_TAIL_LINES = 40


@dataclass
class Outcome:
    exit_code: int | None = None  # None: never started or no code available
    signal: int | None = None  # set when the runner died of a signal we did not send
    timed_out: bool = False
    canceled: bool = False
    pid: int | None = None  # the runner's process (group) id, where there is one
    oom_killed: bool = False  # the kernel killed it for exceeding its memory limit
    memory_limit_mb: int | None = None  # the limit it was held to, where one was set
    image: str = ""  # the container image that ran, where one did
    image_digest: str = ""  # its content address (image id / repo digest)
    stderr_tail: list[str] = field(default_factory=list)
    # Set when the worker stopped the job for going over a limit (its out folder's size):
    # the job ends errored with this text and nothing it left is read.
    limit_exceeded: str = ""


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


class Executor(ABC):
    name: str = ""

    def prepare(self, spec: JobSpec) -> None:
        """Make the out and work folders; engines add their own set-up (inputs, image, ...)."""
        spec.out_dir.mkdir(parents=True, exist_ok=True)
        spec.work_dir.mkdir(parents=True, exist_ok=True)
        if spec.cache_dir is not None:
            spec.cache_dir.mkdir(parents=True, exist_ok=True)

    @abstractmethod
    def execute(self, spec: JobSpec, hooks: ExecutionHooks) -> Outcome: ...

    def cleanup(self, spec: JobSpec) -> None:  # noqa: B027 - optional step
        """Release what execute() left behind (containers, ...)."""

    def run(self, spec: JobSpec, hooks: ExecutionHooks) -> Outcome:
        self.prepare(spec)
        try:
            return self.execute(spec, hooks)
        finally:
            self.cleanup(spec)
