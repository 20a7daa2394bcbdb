"""Event lines: how a runner tells the worker what it is doing while it runs.

One JSON object per line on the process's real stdout, flushed per line, so
that the worker can stream them into the job's live progress bar and log.
"""

from __future__ import annotations

import _thread
import contextlib
import json
import math
from typing import IO

from stack.contract import EVENT_METRIC, EVENT_PROGRESS, LOG_LEVELS, log_event


class Emitter:
    """Writes event lines to a stream that nothing else writes to.

    The CLI gives it a private duplicate of the original stdout and points
    fd 1 at stderr, so a stray ``print()`` or a tool's output can never
    interleave with an event line. Writing is serialised with a lock because
    runners may report from helper threads (a tool's output reader, say).
    If the reader has gone away (broken pipe), events are dropped silently:
    result.json, not the stream, is the record of the job.
    """

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._lock = _thread.allocate_lock()
        self._closed = False
        self.last_pct = 0.0

    def emit(self, event: dict[str, object]) -> None:
        """Write one event as one line, flushed at once."""
        line = json.dumps(event, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        with self._lock:
            if self._closed:
                return
            try:
                self._stream.write(line + "\n")
                self._stream.flush()
            except (BrokenPipeError, ValueError, OSError):
                self._closed = True

    def progress(self, pct: float, message: str = "") -> None:
        """Report how far along the job is, 0 to 100 (clamped, never NaN)."""
        pct = float(pct)
        pct = 0.0 if math.isnan(pct) else min(100.0, max(0.0, pct))
        self.last_pct = pct
        self.emit({"event": EVENT_PROGRESS, "pct": round(pct, 3), "message": str(message)})

    def log(self, message: str, level: str = "info") -> None:
        """Add a line to the job's live log."""
        if level not in LOG_LEVELS:
            raise ValueError(f"level must be one of {LOG_LEVELS}, not {level!r}")
        self.emit(log_event(str(message), level))

    def metric(self, name: str, value: float, unit: str = "") -> None:
        """Report an intermediate number (the final ones go into measurements)."""
        value = float(value)
        if not math.isfinite(value):
            self.log(f"metric {name} is not finite ({value}); not sent", level="warning")
            return
        self.emit({"event": EVENT_METRIC, "name": str(name), "value": value, "unit": str(unit)})

    def close(self) -> None:
        """Flush and stop emitting; later calls are ignored."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            with contextlib.suppress(OSError, ValueError):
                self._stream.flush()
