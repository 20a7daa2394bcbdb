"""ExecutionHooks for tests that run an executor or the follow loop without a database."""

from __future__ import annotations

import time
from dataclasses import dataclass, field


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
