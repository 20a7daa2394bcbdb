"""Caps on what a job's parameters may ask of a worker, from the settings derived from the host.

A kind's schema says what makes sense for the kind (noop may sleep, write, log); the
server says what this installation gives one job: no more memory than the host has, no
more processes than a job may start, no file larger than a job may write, no longer than
a job may run, no more worker processes than the host's CPUs. A value above its cap is
refused at submit, naming the field and the cap, rather than clamped out of sight.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings

MIB = 1024 * 1024

# (kind, field) -> (the cap from the settings, what it is, the unit the field counts in)
Cap = tuple[Callable[[], float], str]
CAPS: dict[tuple[str, str], Cap] = {
    ("noop", "seconds"): (
        lambda: settings.ROCPATH_JOB_TIMEOUT_MAX_S,
        "the longest a job may run (ROCPATH_JOB_TIMEOUT_MAX_S)",
    ),
    ("noop", "write_bytes"): (
        lambda: settings.ROCPATH_JOB_MAX_FILE_MB * MIB,
        "the largest file a job may write (ROCPATH_JOB_MAX_FILE_MB)",
    ),
    ("sandbox-check", "megabytes"): (
        lambda: settings.ROCPATH_JOB_MAX_MEMORY_MB,
        "the memory one job may take (ROCPATH_JOB_MAX_MEMORY_MB)",
    ),
    ("sandbox-check", "max_processes"): (
        lambda: settings.ROCPATH_JOB_MAX_PROCESSES,
        "the processes one job may start (ROCPATH_JOB_MAX_PROCESSES)",
    ),
    ("probe", "tool_timeout_s"): (
        lambda: settings.ROCPATH_JOB_TIMEOUT_MAX_S,
        "the longest a job may run (ROCPATH_JOB_TIMEOUT_MAX_S)",
    ),
    ("probe", "torch_timeout_s"): (
        lambda: settings.ROCPATH_JOB_TIMEOUT_MAX_S,
        "the longest a job may run (ROCPATH_JOB_TIMEOUT_MAX_S)",
    ),
    ("compile-check", "file_timeout_s"): (
        lambda: settings.ROCPATH_JOB_TIMEOUT_MAX_S,
        "the longest a job may run (ROCPATH_JOB_TIMEOUT_MAX_S)",
    ),
    **{
        (kind, "jobs"): (lambda: settings.HOST_CPUS, "this host's CPUs")
        for kind in ("hipify-scan", "hipify-convert", "compile-check")
    },
}


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def param_cap_errors(kind: str, params: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """``field: message`` for each parameter above its cap (the submit form's shape).

    A value equal to the kind's default is not refused: defaults are ours, and a host
    smaller than they assume holds the job to its limits at run time instead.
    """
    properties = schema.get("properties", {})
    problems = []
    for (cap_kind, name), (cap_of, what) in CAPS.items():
        if cap_kind != kind or name not in params:
            continue
        value = params[name]
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if value == properties.get(name, {}).get("default"):
            continue
        cap = cap_of()
        if value > cap:
            problems.append(f"{name}: at most {_number(cap)}, {what}; {_number(value)} asked")
    return problems
