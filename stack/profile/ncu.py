"""Nsight Compute: the command that wraps a workload, and its CSV read into KernelStat rows.

``ncu --csv`` prints one row per kernel launch and metric ("ID","Process ID","Process
Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device",
"CC","Section Name","Metric Name","Metric Unit","Metric Value"), after the workload's
own output and ncu's ``==PROF==`` lines; the reader finds the header and reads from it.
``--clock-control none`` leaves the GPU's clocks as the workload would see them (ncu's
default locks them to base, which is not what a user runs at).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

from stack.profile.normalise import KernelStat, finite

DURATION = "gpu__time_duration.sum"
# metric -> KernelStat attribute
COUNTER_METRICS = {
    "sm__warps_active.avg.pct_of_peak_sustained_active": "occupancy_pct",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm_throughput_pct",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram_throughput_pct",
    "lts__t_sector_hit_rate.pct": "l2_hit_pct",
}
METRICS = (
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "lts__t_sector_hit_rate.pct",
    DURATION,
    "sm__warps_active.avg.pct_of_peak_sustained_active",
)
HEADER_START = '"ID","Process ID"'
NS_PER_UNIT = {
    "ns": 1.0,
    "nsecond": 1.0,
    "us": 1e3,
    "usecond": 1e3,
    "ms": 1e6,
    "msecond": 1e6,
    "s": 1e9,
    "second": 1e9,
}


class NcuOutputError(ValueError):
    """ncu's output holds no CSV table (it failed, or profiled no kernel)."""


def command(ncu: str, target: Sequence[str], *, max_kernels: int, from_start: bool) -> list[str]:
    """The ncu command line over ``target`` (the workload's own argv).

    ``from_start=False`` profiles only between cudaProfilerStart and Stop, which the
    built-in workloads call around their measured steps (warm-up stays out); a script
    does not call them, so it is profiled from its start.
    """
    argv = [
        ncu,
        "--clock-control",
        "none",
        "--csv",
        "--target-processes",
        "all",
        "--launch-count",
        str(max_kernels),
        "--metrics",
        ",".join(METRICS),
    ]
    if not from_start:
        argv += ["--profile-from-start", "off"]
    return [*argv, *target]


def csv_table(text: str) -> str:
    """The CSV part of ncu's output: from its header line on, ncu's own lines left out."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(HEADER_START):
            table = [line for line in lines[i:] if not line.startswith("==")]
            return "\n".join(table) + "\n"
    raise NcuOutputError('no CSV table in ncu\'s output (header "ID","Process ID",… not found)')


def parse_csv(text: str) -> list[KernelStat]:
    """One KernelStat per launch (calls=1), its counters filled; merge_by_name sums them.

    A launch without gpu__time_duration counts with zero time (it is still a call).
    """
    reader = csv.DictReader(io.StringIO(csv_table(text)))
    launches: dict[str, KernelStat] = {}
    order: list[str] = []
    for row in reader:
        launch = (row.get("ID") or "").strip()
        name = (row.get("Kernel Name") or "").strip()
        if not launch or not name:
            continue
        stat = launches.get(launch)
        if stat is None:
            stat = launches[launch] = KernelStat(name=name, calls=1, total_ns=0.0)
            order.append(launch)
        metric = (row.get("Metric Name") or "").strip()
        value = finite(row.get("Metric Value"))
        if value is None:
            continue
        if metric == DURATION:
            unit = (row.get("Metric Unit") or "ns").strip().lower()
            stat.total_ns = value * NS_PER_UNIT.get(unit, 1.0)
            stat.durations_ns = [stat.total_ns]
        elif metric in COUNTER_METRICS:
            setattr(stat, COUNTER_METRICS[metric], value)
    return [launches[launch] for launch in order]
