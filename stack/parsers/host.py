"""The host's own files: /etc/os-release, /proc/cpuinfo, /proc/meminfo."""

from __future__ import annotations

import shlex


def parse_os_release(text: str) -> dict[str, str]:
    """KEY=value pairs of os-release(5), with shell quoting undone."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, raw = line.partition("=")
        try:
            parts = shlex.split(raw)
        except ValueError:
            parts = [raw.strip("\"'")]
        values[key.strip()] = " ".join(parts)
    return values


def parse_cpu_model(text: str) -> str | None:
    """The CPU's name from /proc/cpuinfo.

    x86 has "model name"; some ARM kernels have "Model" or only
    "Hardware"/"CPU part", so the first usable key wins.
    """
    wanted = ("model name", "model", "hardware", "cpu model", "cpu")
    found: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        key = key.strip().lower()
        value = " ".join(value.split())
        # x86's "model" is a number; only a name will do.
        if sep and key in wanted and key not in found and value and not value.isdigit():
            found[key] = value
    for key in wanted:
        if key in found:
            return found[key]
    return None


def parse_meminfo_total(text: str) -> int | None:
    """MemTotal from /proc/meminfo, in bytes (the file says kB and means KiB)."""
    for line in text.splitlines():
        if line.startswith("MemTotal:"):
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                unit = parts[2].lower() if len(parts) > 2 else "kb"
                return int(parts[1]) * (1024 if unit == "kb" else 1)
    return None
