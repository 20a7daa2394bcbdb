"""Caps on what a job's parameters may ask of a worker, from the settings derived from the host.

A kind's schema says what makes sense for the kind (noop may sleep, write, log); the
server says what this installation gives one job: no more memory than the host has, no
more processes than a job may start, no file larger than a job may write, no longer than
a job may run, no more worker processes than the host's CPUs. A value above its cap is
refused at submit, naming the field and the cap, rather than clamped out of sight.

Which parameter counts against which cap is the kind's to say (``Kind.param_caps``, in
its own module under stack/kinds); this module only knows what each cap is worth here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings

from stack.kinds import KINDS, Cap

MIB = 1024 * 1024

# A cap's name -> (its value from the settings, what it is, as the refusal says it)
CAPS: dict[str, tuple[Callable[[], float], str]] = {
    Cap.RUN_SECONDS: (
        lambda: settings.ROCPATH_JOB_TIMEOUT_MAX_S,
        "the longest a job may run (ROCPATH_JOB_TIMEOUT_MAX_S)",
    ),
    Cap.FILE_BYTES: (
        lambda: settings.ROCPATH_JOB_MAX_FILE_MB * MIB,
        "the largest file a job may write (ROCPATH_JOB_MAX_FILE_MB)",
    ),
    Cap.MEMORY_MB: (
        lambda: settings.ROCPATH_JOB_MAX_MEMORY_MB,
        "the memory one job may take (ROCPATH_JOB_MAX_MEMORY_MB)",
    ),
    Cap.PROCESSES: (
        lambda: settings.ROCPATH_JOB_MAX_PROCESSES,
        "the processes one job may start (ROCPATH_JOB_MAX_PROCESSES)",
    ),
    Cap.CPUS: (lambda: settings.HOST_CPUS, "this host's CPUs"),
}


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def param_cap_errors(kind: str, params: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """``field: message`` for each parameter above its cap (the submit form's shape).

    A value equal to the kind's default is not refused: defaults are ours, and a host
    smaller than they assume holds the job to its limits at run time instead.
    """
    spec = KINDS.get(kind)
    if spec is None:
        return []
    properties = schema.get("properties", {})
    problems = []
    for name, cap_name in spec.param_caps.items():
        if name not in params:
            continue
        value = params[name]
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if value == properties.get(name, {}).get("default"):
            continue
        cap_of, what = CAPS[cap_name]
        cap = cap_of()
        if value > cap:
            problems.append(f"{name}: at most {_number(cap)}, {what}; {_number(value)} asked")
    return problems
