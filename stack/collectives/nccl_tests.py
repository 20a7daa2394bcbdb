"""rccl-tests / nccl-tests: the command line and the table they print.

Both print the same table (rccl-tests is a port of nccl-tests), one row per size
(tests/stack/collectives/fixtures/ holds whole runs): ``size count type redop root``,
then ``time algbw busbw #wrong`` out of place and the same four in place. So
the out-of-place figures, then the in-place ones. Versions differ: before 2.10 there is
no ``root`` column; all-gather and all-to-all print ``none`` as redop; ``#wrong`` may be
``N/A`` when the check is off (-c 0). The parser reads the header line to know which
columns it has, and keeps the rows whose numbers parse.
"""

from __future__ import annotations

import re
import shutil
from typing import Any

BINARIES = {
    "all_reduce": "all_reduce_perf",
    "all_gather": "all_gather_perf",
    "reduce_scatter": "reduce_scatter_perf",
    "all_to_all": "alltoall_perf",
    "broadcast": "broadcast_perf",
    "send_recv": "sendrecv_perf",
}
_DTYPES = {"float32": "float", "float16": "half", "bfloat16": "bfloat16", "float64": "double"}


def find(op: str) -> str | None:
    return shutil.which(BINARIES[op])


def command(
    binary: str,
    *,
    min_bytes: int,
    max_bytes: int,
    factor: int,
    gpus: int,
    dtype: str,
    iters: int,
    warmup: int,
    check: bool,
) -> list[str]:
    """One process driving ``gpus`` GPUs, as the tools' README runs them."""
    return [
        binary,
        "-b",
        str(min_bytes),
        "-e",
        str(max_bytes),
        "-f",
        str(factor),
        "-g",
        str(gpus),
        "-d",
        _DTYPES[dtype],
        "-n",
        str(iters),
        "-w",
        str(warmup),
        "-c",
        "1" if check else "0",
    ]


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _wrong(text: str | None) -> int | None:
    """The #wrong count (``error`` in older versions); None when the check was off."""
    value = _number(text) if text not in (None, "N/A") else None
    return None if value is None else int(value)


def parse(output: str) -> dict[str, Any]:
    """The rows and the summary line ("# Avg bus bandwidth : 123.4") of one run."""
    columns: list[str] | None = None
    rows: list[dict[str, Any]] = []
    avg = None
    for line in output.splitlines():
        stripped = line.strip()
        if stripped.startswith("#") and "size" in stripped and "count" in stripped:
            names = stripped.lstrip("#").split()
            # the second time/algbw/busbw/#wrong group is in-place
            seen: dict[str, int] = {}
            columns = []
            for name in names:
                seen[name] = seen.get(name, 0) + 1
                columns.append(name if seen[name] == 1 else f"in_{name}")
            continue
        if match := re.match(r"#\s*Avg bus bandwidth\s*:\s*([0-9.]+)", stripped):
            avg = float(match.group(1))
            continue
        if columns is None or not stripped or stripped.startswith("#"):
            continue
        fields = stripped.split()
        if len(fields) != len(columns):
            continue
        row = dict(zip(columns, fields, strict=True))
        size, time_us = _number(row["size"]), _number(row["time"])
        if size is None or time_us is None:
            continue
        rows.append(
            {
                "size": int(size),
                "count": int(_number(row["count"]) or 0),
                "type": row.get("type"),
                "time_us": time_us,
                "algbw_gbps": _number(row["algbw"]),
                "busbw_gbps": _number(row["busbw"]),
                "wrong": _wrong(row.get("#wrong", row.get("error"))),
                "in_place_time_us": _number(row.get("in_time", "")),
                "in_place_busbw_gbps": _number(row.get("in_busbw", "")),
            }
        )
    return {"rows": rows, "avg_busbw_gbps": avg}
