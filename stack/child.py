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

DRIVER_FILE = "driver.json"


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
        report = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:2000]}
    (out / DRIVER_FILE).write_text(json.dumps(report), encoding="utf-8")
    return 0 if report["ok"] else 1
