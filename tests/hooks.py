"""ExecutionHooks for tests that run an executor or the follow loop without a database,
and a look at whether a runner's process is still there."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Recorder:
    """Records the events and lines it is handed; asks to cancel after ``cancel_after`` s."""

    events: list[dict] = field(default_factory=list)
    lines: list[tuple[str, str]] = field(default_factory=list)
    cancel_after: float | None = None
    beats: int = 0
    started: float = field(default_factory=time.monotonic)

    def on_event(self, event: dict) -> None:
        self.events.append(event)

    def on_line(self, line: str, stream: str) -> None:
        self.lines.append((stream, line))

    def should_cancel(self) -> bool:
        return self.cancel_after is not None and time.monotonic() - self.started > self.cancel_after

    def heartbeat(self) -> None:
        self.beats += 1


def alive(pid: int) -> bool:
    """Whether a process of that pid runs on the host; a zombie (answers kill(0)) does not."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split(")")[-1].split()[0] != "Z"
