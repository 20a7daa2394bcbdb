"""Facts of the machine (or container) the probe runs on, from /proc, /sys and /etc."""

from __future__ import annotations

import os
from typing import Any

from stack.parsers import host


def read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def host_info() -> dict[str, Any]:
    """CPU, memory, OS, kernel, architecture and Python of the machine (or container)."""
    import platform  # lazy: listing kinds imports this package

    uname = os.uname()
    os_release = read_text("/etc/os-release") or read_text("/usr/lib/os-release") or ""
    cpuinfo = read_text("/proc/cpuinfo") or ""
    meminfo = read_text("/proc/meminfo") or ""
    cpu_model = host.parse_cpu_model(cpuinfo) or platform.processor() or None
    info: dict[str, Any] = {
        "hostname": uname.nodename,
        "os": host.parse_os_release(os_release).get("PRETTY_NAME"),
        "kernel": uname.release,
        "arch": uname.machine,
        "python": platform.python_version(),
        "cpu_model": cpu_model,
        "cpu_cores": os.cpu_count(),
        "memory_bytes": host.parse_meminfo_total(meminfo),
    }
    # A container sees the host's totals above; its own limits are these.
    if hasattr(os, "sched_getaffinity"):
        info["cpus_usable"] = len(os.sched_getaffinity(0))
    limit = (read_text("/sys/fs/cgroup/memory.max") or "").strip()
    info["memory_limit_bytes"] = int(limit) if limit.isdigit() else None
    return info


def rocm_version_from_install() -> str | None:
    """The installed ROCm release, from $ROCM_PATH/.info/version (the images' layout)."""
    root = os.environ.get("ROCM_PATH") or "/opt/rocm"
    text = read_text(os.path.join(root, ".info", "version"))
    return text.strip().splitlines()[0].strip() if text and text.strip() else None
