"""rocprofv3: the command that wraps a workload, and its CSV files read into KernelStat rows.

``rocprofv3 --kernel-trace --stats --output-format csv -d DIR -o NAME -- APP`` writes
``NAME_kernel_stats.csv`` (Name,Calls,TotalDurationNs,AverageNs,Percentage,MinNs,MaxNs,
StdDev) and ``NAME_kernel_trace.csv`` (one row per dispatch: Kind, Agent_Id, …,
Kernel_Name, …, Start_Timestamp, End_Timestamp in ns, …), under DIR or a
``HOST/PID`` folder inside it depending on the version — so the files are found by
name anywhere under DIR. Written from the documented formats (docs/profiling.md): no
AMD GPU was at hand, and rocprofv3 has not been run here.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path

from stack.profile.normalise import KernelStat, finite

OUTPUT_NAME = "profile"
STATS_SUFFIX = "_kernel_stats.csv"
TRACE_SUFFIX = "_kernel_trace.csv"


def command(rocprofv3: str, target: Sequence[str], out_dir: Path) -> list[str]:
    """The rocprofv3 command line over ``target`` (the workload's own argv)."""
    return [
        rocprofv3,
        "--kernel-trace",
        "--stats",
        "--output-format",
        "csv",
        "-d",
        str(out_dir),
        "-o",
        OUTPUT_NAME,
        "--",
        *target,
    ]


def find_outputs(out_dir: Path) -> dict[str, Path]:
    """``stats`` and ``trace`` CSV files rocprofv3 left under out_dir (either may be missing)."""
    found: dict[str, Path] = {}
    for path in sorted(out_dir.rglob("*.csv")):
        if path.name.endswith(STATS_SUFFIX):
            found.setdefault("stats", path)
        elif path.name.endswith(TRACE_SUFFIX) or path.name == "kernel_trace.csv":
            found.setdefault("trace", path)
    return found


def parse_kernel_stats(text: str) -> list[KernelStat]:
    """``*_kernel_stats.csv`` (also legacy rocprof's ``results.stats.csv``, its first five
    columns): one row per kernel name with its calls and total time."""
    rows = []
    for row in csv.DictReader(io.StringIO(text)):
        name = (row.get("Name") or "").strip()
        calls = finite(row.get("Calls"))
        total = finite(row.get("TotalDurationNs"))
        if not name or calls is None or total is None:
            continue
        rows.append(KernelStat(name=name, calls=int(calls), total_ns=total))
    return rows


def parse_kernel_trace(text: str) -> list[KernelStat]:
    """``*_kernel_trace.csv``: one KernelStat per dispatch, its time End - Start."""
    rows = []
    for row in csv.DictReader(io.StringIO(text)):
        name = (row.get("Kernel_Name") or "").strip()
        start = finite(row.get("Start_Timestamp"))
        end = finite(row.get("End_Timestamp"))
        if not name or start is None or end is None or end < start:
            continue
        rows.append(
            KernelStat(name=name, calls=1, total_ns=end - start, durations_ns=[end - start])
        )
    return rows


def read_outputs(out_dir: Path) -> tuple[list[KernelStat], dict[str, Path]]:
    """The kernels of a rocprofv3 run: from the trace when there is one (it has each
    dispatch's time, so mean times get samples), else from the statistics."""
    files = find_outputs(out_dir)
    if "trace" in files:
        rows = parse_kernel_trace(files["trace"].read_text(encoding="utf-8", errors="replace"))
        if rows:
            return rows, files
    if "stats" in files:
        return parse_kernel_stats(
            files["stats"].read_text(encoding="utf-8", errors="replace")
        ), files
    return [], files
