"""Pure functions from a tool's text output to plain dicts.

No subprocesses, no file reads: every parser takes the text a tool printed,
so each can be tested on a saved sample and reused wherever that text comes
from (a live run, an uploaded log, an artifact of an old job).

Shared helpers live here: tools print "N/A" in a dozen spellings, sizes with
or without units, and JSON after a warning line.
"""

from __future__ import annotations

import json
import re
from typing import Any

from stack.contract import GPU_FIELDS

_NA = {
    "",
    "n/a",
    "na",
    "[n/a]",
    "not supported",
    "[not supported]",
    "unknown",
    "none",
    "null",
    "-",
}

# Tools that report "MB"/"GB" for GPU memory (amd-smi, rocminfo's KB) mean
# binary units, so every unit here is a power of 1024.
_UNIT_BYTES = {
    "b": 1,
    "kb": 1024,
    "kib": 1024,
    "mb": 1024**2,
    "mib": 1024**2,
    "gb": 1024**3,
    "gib": 1024**3,
    "tb": 1024**4,
    "tib": 1024**4,
}


class ParseError(ValueError):
    """The text is not what the tool prints (wrong tool, truncated, an error page)."""


def clean(value: Any) -> str | None:
    """A stripped string, or None for the many ways tools say "no value"."""
    if value is None:
        return None
    text = str(value).strip()
    return None if text.lower() in _NA else text


def to_int(value: Any) -> int | None:
    """The leading integer of a value: 304, "304", "64(0x40)", "0x74a1"; else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    text = clean(value)
    if text is None:
        return None
    if re.fullmatch(r"0[xX][0-9a-fA-F]+", text):
        return int(text, 16)
    match = re.match(r"^\s*(\d+)", text)
    return int(match.group(1)) if match else None


def size_to_bytes(value: Any, default_unit: str = "B") -> int | None:
    """Bytes from 196592, "196592 MB", "201310208(0xbffc000) KB" or {"value": .., "unit": ..}."""
    if isinstance(value, dict):
        return size_to_bytes(value.get("value"), str(value.get("unit") or default_unit))
    if isinstance(value, int | float) and not isinstance(value, bool):
        factor = _UNIT_BYTES.get(default_unit.strip().lower())
        return None if factor is None else int(value * factor)
    text = clean(value)
    if text is None:
        return None
    match = re.match(r"^\s*([\d.]+)\s*(?:\(0x[0-9a-fA-F]+\))?\s*([A-Za-z]*)\s*$", text)
    if not match:
        return None
    number, unit = match.groups()
    factor = _UNIT_BYTES.get((unit or default_unit).lower())
    if factor is None:
        return None
    try:
        return int(float(number) * factor)
    except ValueError:
        return None


def extract_json(text: str) -> Any:
    """The first JSON document in text, skipping any warning lines printed before it.

    amd-smi and rocm-smi print notices (missing groups, deprecated flags) on
    stdout ahead of their JSON; a plain json.loads would fail on them.
    """
    decoder = json.JSONDecoder()
    for match in re.finditer(r"^[ \t]*([\[{])", text, re.MULTILINE):
        try:
            value, _ = decoder.raw_decode(text, match.start(1))
        except ValueError:
            continue
        return value
    raise ParseError("no JSON document found in the output")


def gpu_entry(**fields: Any) -> dict[str, Any]:
    """A GPU record with every key of the environment schema, in order."""
    unknown = set(fields) - set(GPU_FIELDS)
    if unknown:
        raise TypeError(f"unknown GPU fields: {sorted(unknown)}")
    return {name: fields.get(name) for name in GPU_FIELDS}


def strip_ansi(text: str) -> str:
    """Remove terminal colour codes (rocminfo colours its preamble)."""
    return re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", text)
