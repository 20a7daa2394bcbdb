"""The entry point of a job's child process: read its JSON spec, run, write its report.

The profile and tune-gemm runners start their workload in a child process (torch and the
profilers stay out of the runner); each child's module calls ``drive`` from its
``main``. A spec it cannot read exits 2; a run that raises is the report (``ok`` false,
the error), not a crash, and exits 1.
"""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stack.causes import FULL_ERRNOS, cause_of, full_disk_cause

DRIVER_FILE = "driver.json"
# The line a child that could not write its report ends its stderr with: its failure.
FAILED_PREFIX = "child failed: "


def failure_said(stderr: str) -> str:
    """What a child that could not write its report said of its failure, or ""."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    if lines and lines[-1].startswith(FAILED_PREFIX):
        return lines[-1][len(FAILED_PREFIX) :].strip()
    return ""


def drive(argv: list[str], run: Callable[[dict[str, Any]], dict[str, Any]], name: str) -> int:
    """Run ``run(spec)`` for the spec file argv[0]; write its report to out_dir."""
    try:
        spec = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
        out = Path(spec["out_dir"])
    except (IndexError, OSError, ValueError, KeyError, TypeError) as exc:
        sys.stderr.write(f"{name}: cannot read the spec: {exc}\n")
        return 2
    try:
        report = run(spec)
    except Exception as exc:  # the child's failure is the report, not a crash
        traceback.print_exc()
        report = {"ok": False, "error": cause_of(exc)}
    try:
        (out / DRIVER_FILE).write_text(json.dumps(report), encoding="utf-8")
    except OSError as exc:
        # Its folder is full or gone (a /tmp the workload filled): the runner reads the
        # cause from stderr instead, the workload's own failure first when there was one.
        said = full_disk_cause(exc, out)
        if report.get("error") and exc.errno not in FULL_ERRNOS:
            said = f"{report['error']} (its report could not be written: {said})"
        sys.stderr.write(f"{FAILED_PREFIX}{said}\n")
        return 1
    return 0 if report["ok"] else 1
