"""Compiler diagnostics (clang / hipcc) as records: file, line, column, severity, message.

A compile check is only useful if a developer can jump to the line, so the
text clang prints is parsed rather than stored raw. Handles located
diagnostics (``x.hip:2:35: error: ...``, with or without a column), the code
snippet and caret lines after them (kept as ``snippet``), driver and linker
messages without a location (``clang: error: ...``, ``ld.lld: error: ...``),
``In file included from`` chains, and the ``N errors generated when
compiling for gfx90a.`` trailer (which names the offload target).
"""

from __future__ import annotations

import os
import re
from typing import Any

SEVERITIES = ("fatal error", "error", "warning", "note", "remark")

_LOCATED = re.compile(
    r"^(?P<file>.+?):(?P<line>\d+):(?:(?P<col>\d+):)? "
    r"(?P<sev>fatal error|error|warning|note|remark): (?P<msg>.*)$"
)
_TOOL = re.compile(
    r"^(?P<tool>clang(?:-\d+)?(?:\+\+)?|hipcc|ld(?:\.lld)?|lld|clang-offload-bundler|llc|opt)"
    r": (?P<sev>fatal error|error|warning|note|remark): (?P<msg>.*)$"
)
_INCLUDED = re.compile(r"^In file included from (?P<file>.+?):(?P<line>\d+):")
_GENERATED = re.compile(
    r"^(?P<n>\d+) (?P<what>errors?|warnings?)(?: and \d+ \w+)? generated"
    r"(?: when compiling for (?P<target>[\w:+-]+))?\.$"
)
_FLAG = re.compile(r" \[(?P<flag>-W[\w#=+-]+(?:,-W[\w#=+-]+)*|-Werror[\w=-]*)\]$")


def _relative(path: str, root: str | None) -> str:
    if root is None:
        return path
    try:
        full = os.path.normpath(path if os.path.isabs(path) else os.path.join(root, path))
        rel = os.path.relpath(full, root)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel.replace(os.sep, "/")


def _record(severity: str, message: str, **fields: Any) -> dict[str, Any]:
    """A diagnostic record; ``fields`` fill in the location and the rest."""
    return {
        "file": None,
        "line": None,
        "column": None,
        "severity": severity,
        "message": message,
        "flag": None,
        "snippet": [],
        "included_from": [],
        "target": None,
        **fields,
    }


def parse_clang_diagnostics(text: str, root: str | None = None) -> dict[str, Any]:
    """Parse clang/hipcc stderr.

    Returns ``diagnostics`` (file relative to ``root`` when under it, line,
    column or None, severity, message, flag, snippet, included_from,
    target), ``counts`` per severity, ``targets`` named by the trailer lines,
    and ``other`` (lines that are none of these).
    """
    diagnostics: list[dict[str, Any]] = []
    other: list[str] = []
    included: list[str] = []
    targets: list[str] = []
    pending: list[dict[str, Any]] = []  # diagnostics not yet tied to a target
    last: dict[str, Any] | None = None
    for raw in text.split("\n"):
        line = raw.rstrip("\r")
        if not line.strip():
            last = None
            continue
        m = _INCLUDED.match(line)
        if m:
            included.append(f"{_relative(m.group('file'), root)}:{m.group('line')}")
            last = None
            continue
        m = _LOCATED.match(line)
        if m:
            message = m.group("msg")
            flag = _FLAG.search(message)
            record = _record(
                m.group("sev"),
                message[: flag.start()] if flag else message,
                file=_relative(m.group("file"), root),
                line=int(m.group("line")),
                column=int(m.group("col")) if m.group("col") else None,
                flag=flag.group("flag") if flag else None,
                included_from=included,
            )
            included = []
            diagnostics.append(record)
            pending.append(record)
            last = record
            continue
        m = _TOOL.match(line)
        if m:
            record = _record(m.group("sev"), m.group("msg"), tool=m.group("tool"))
            diagnostics.append(record)
            pending.append(record)
            last = None
            continue
        m = _GENERATED.match(line)
        if m:
            target = m.group("target")
            if target:
                if target not in targets:
                    targets.append(target)
                for record in pending:
                    record["target"] = target
            pending = []
            last = None
            continue
        if last is not None and len(last["snippet"]) < 3:
            # the source line, the caret line and maybe a fix-it line
            last["snippet"].append(line)
            continue
        other.append(line)
    counts = dict.fromkeys(SEVERITIES, 0)
    for record in diagnostics:
        counts[record["severity"]] += 1
    return {"diagnostics": diagnostics, "counts": counts, "targets": targets, "other": other}
