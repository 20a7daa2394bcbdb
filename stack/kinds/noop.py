"""The noop kind: does nothing, on purpose, in a controllable way.

It is the orchestrator's test double and benchmark load: it must start fast,
obey cancellation (short sleeps, so a signal is handled promptly) and be able
to end in every status.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from stack.contract import ERRORED, FAILED, STATUSES, SUCCEEDED
from stack.kinds.base import Cap, Kind
from stack.runtime import Measurement, RunContext, RunResult

KIND = Kind(
    name="noop",
    title="No-op",
    description=(
        "Sleeps, reports progress, optionally writes an artifact and ends with the "
        "status asked for. Exists to test and benchmark the orchestrator itself."
    ),
    params_schema={
        "type": "object",
        "properties": {
            "seconds": {
                "type": "number",
                "minimum": 0,
                "maximum": 86400,
                "default": 0,
                "description": "How long to sleep in total.",
            },
            "steps": {
                "type": "integer",
                "minimum": 1,
                "maximum": 1000,
                "default": 1,
                "description": "How many progress events, spread evenly over the sleep.",
            },
            "exit_status": {
                "type": "string",
                "enum": list(STATUSES),
                "default": SUCCEEDED,
                "description": "The status to end with.",
            },
            "write_bytes": {
                "type": "integer",
                "minimum": 0,
                "maximum": 4 * 1024**3,
                "default": 0,
                "description": "Size of the artifact noop.bin to write (0: none).",
            },
            "log_lines": {
                "type": "integer",
                "minimum": 0,
                "maximum": 1_000_000,
                "default": 0,
                "description": "How many log events to emit.",
            },
        },
        "additionalProperties": False,
    },
    default_timeout_s=600,
    runner="stack.kinds.noop:run",
    param_caps={"seconds": Cap.RUN_SECONDS, "write_bytes": Cap.FILE_BYTES},
)


SLEEP_SLICE_S = 0.05
_CHUNK = 1024 * 1024


def _sleep_until(deadline: float) -> None:
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(SLEEP_SLICE_S, left))


def _write_zeros(path: Path, size: int) -> None:
    chunk = memoryview(bytes(min(size, _CHUNK)))
    with open(path, "wb") as f:
        left = size
        while left > 0:
            n = min(left, len(chunk))
            f.write(chunk[:n])
            left -= n


def run(params: dict[str, Any], ctx: RunContext) -> RunResult:
    """Sleep ``seconds`` in ``steps`` progress steps, then end as ``exit_status`` says."""
    seconds = float(params["seconds"])
    steps = int(params["steps"])
    log_lines = int(params["log_lines"])
    write_bytes = int(params["write_bytes"])
    exit_status = params["exit_status"]

    for i in range(log_lines):
        ctx.emit.log(f"noop log line {i + 1} of {log_lines}")

    started = time.monotonic()
    for step in range(1, steps + 1):
        _sleep_until(started + seconds * step / steps)
        ctx.emit.progress(100.0 * step / steps, f"step {step} of {steps}")
    elapsed = time.monotonic() - started

    artifacts = []
    if write_bytes:
        _write_zeros(ctx.out / "noop.bin", write_bytes)
        artifacts.append(
            {
                "path": "noop.bin",
                "content_type": "application/octet-stream",
                "description": f"{write_bytes} zero bytes written by noop",
            }
        )

    error = None
    if exit_status == FAILED:
        error = "noop was asked to fail (exit_status=failed)"
    elif exit_status == ERRORED:
        error = "noop was asked to end errored (exit_status=errored)"

    return RunResult(
        status=exit_status,
        measurements=[
            Measurement(
                benchmark="noop",
                metric="sleep_s",
                unit="s",
                value=elapsed,
                samples=[elapsed],
                better="lower",
            )
        ],
        summary={
            "seconds": seconds,
            "elapsed_s": round(elapsed, 6),
            "steps": steps,
            "log_lines": log_lines,
            "bytes_written": write_bytes,
        },
        artifacts=artifacts,
        error=error,
    )
