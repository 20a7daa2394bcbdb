"""The PyTorch profiler's output read into KernelStat rows, and its Chrome trace trimmed.

Two shapes: ``key_averages()`` (one FunctionEventAvg per operator name; times in µs),
which the driver turns into plain dicts (``key_average_rows``) so that the runner needs
no torch; and the Chrome trace (``export_chrome_trace``: ``traceEvents`` of complete
events, ``ph`` "X", ``ts``/``dur`` in µs, ``cat`` "kernel" for a GPU kernel, "cpu_op"
for an operator). On a GPU the kernels come from the trace; on the CPU, where there are
no kernels, the operators' self time from key_averages is the profile.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from stack.profile.normalise import KernelStat, finite

KERNEL_CATEGORY = "kernel"
OPERATOR_CATEGORY = "cpu_op"
NS_PER_US = 1000.0


def key_average_rows(averages: Iterable[Any]) -> list[dict[str, Any]]:
    """FunctionEventAvg objects as dicts of plain numbers (µs), whatever the torch version.

    torch 2.4 renamed ``cuda_time_total`` to ``device_time_total``; both are read.
    """

    def number(event: Any, *names: str) -> float:
        for name in names:
            value = getattr(event, name, None)
            if value is not None:
                return float(value)
        return 0.0

    rows = []
    for event in averages:
        rows.append(
            {
                "key": str(event.key),
                "count": int(event.count),
                "cpu_time_total_us": number(event, "cpu_time_total"),
                "self_cpu_time_total_us": number(event, "self_cpu_time_total"),
                "device_time_total_us": number(event, "device_time_total", "cuda_time_total"),
                "self_device_time_total_us": number(
                    event, "self_device_time_total", "self_cuda_time_total"
                ),
            }
        )
    return rows


def parse_key_averages(rows: Iterable[dict[str, Any]], *, device: bool = False) -> list[KernelStat]:
    """Operators by self time: CPU time, or with ``device`` the GPU time they launched.

    Self time, so that nested operators (aten::matmul → aten::mm) are not counted twice.
    """
    field = "self_device_time_total_us" if device else "self_cpu_time_total_us"
    out = []
    for row in rows:
        name = str(row.get("key") or "").strip()
        calls = finite(row.get("count"))
        total = finite(row.get(field))
        if not name or not calls or total is None or total <= 0:
            continue
        out.append(KernelStat(name=name, calls=int(calls), total_ns=total * NS_PER_US))
    return out


def trace_events(document: Any) -> list[dict[str, Any]]:
    """The trace's event list: a dict with ``traceEvents``, or a bare list (both are valid)."""
    events = document.get("traceEvents") if isinstance(document, dict) else document
    return [e for e in events if isinstance(e, dict)] if isinstance(events, list) else []


def parse_chrome_trace(document: Any, category: str = KERNEL_CATEGORY) -> list[KernelStat]:
    """One KernelStat per complete event of the category (GPU kernels by default)."""
    out = []
    for event in trace_events(document):
        if event.get("ph") != "X" or event.get("cat") != category:
            continue
        name = str(event.get("name") or "").strip()
        duration = finite(event.get("dur"))
        if not name or duration is None or duration < 0:
            continue
        ns = duration * NS_PER_US
        out.append(KernelStat(name=name, calls=1, total_ns=ns, durations_ns=[ns]))
    return out


def trim_trace(document: Any, max_bytes: int) -> tuple[Any, int]:
    """The trace cut to at most about ``max_bytes`` of JSON, and how many events were cut.

    Metadata events (``ph`` "M": process and thread names) are all kept; of the rest the
    latest are kept, since a profile's last steps are its steadiest. Other top-level keys
    (deviceProperties, schemaVersion) stay, so Perfetto reads the result as before.
    """
    text = json.dumps(document)
    if len(text) <= max_bytes:
        return document, 0
    events = trace_events(document)
    meta = [e for e in events if e.get("ph") == "M"]
    timed = sorted(
        (e for e in events if e.get("ph") != "M"), key=lambda e: finite(e.get("ts")) or 0.0
    )
    head = dict(document) if isinstance(document, dict) else {}
    head["traceEvents"] = meta
    budget = max_bytes - len(json.dumps(head))
    kept: list[dict[str, Any]] = []
    for event in reversed(timed):
        size = len(json.dumps(event)) + 2
        if size > budget:
            break
        budget -= size
        kept.append(event)
    kept.reverse()
    head["traceEvents"] = meta + kept
    return head, len(timed) - len(kept)
