"""nvidia-smi: ``--query-gpu=... --format=csv,noheader,nounits`` and the banner.

The query output is one CSV line per GPU in the order of QUERY_FIELDS;
memory.total is in MiB with ``nounits``, compute_cap is "9.0" (newer drivers
only; older ones print "[N/A]" or reject the field). The CUDA version is not
in the query: it is on the banner of plain ``nvidia-smi``
(``CUDA Version: 13.0``) and in ``nvidia-smi --version``; it is the highest
CUDA the driver supports, not the toolkit's version.
"""

from __future__ import annotations

import csv
import re
from typing import Any

from stack.parsers import ParseError, clean, gpu_entry, size_to_bytes, to_int

QUERY_FIELDS = ("index", "name", "uuid", "memory.total", "driver_version", "compute_cap")
QUERY_ARGS = (f"--query-gpu={','.join(QUERY_FIELDS)}", "--format=csv,noheader,nounits")
# Drivers older than compute_cap (about R510) reject the whole query with it.
LEGACY_FIELDS = QUERY_FIELDS[:-1]
LEGACY_QUERY_ARGS = (f"--query-gpu={','.join(LEGACY_FIELDS)}", "--format=csv,noheader,nounits")

_CAP = re.compile(r"^(\d+)\.(\d+)$")


def compute_cap_to_arch(cap: str | None) -> str | None:
    """CUDA arch name for a compute capability: "9.0" → "sm_90", "12.0" → "sm_120"."""
    match = _CAP.match((cap or "").strip())
    return f"sm_{match.group(1)}{match.group(2)}" if match else None


def parse_query_gpu(text: str, fields: tuple[str, ...] = QUERY_FIELDS) -> list[dict[str, Any]]:
    """GPU records (environment schema) from the query output.

    ``fields`` are the queried fields in order (QUERY_FIELDS or LEGACY_FIELDS).
    A header line (``--format=csv`` without ``noheader``) is skipped, and a
    "MiB" unit after the memory is accepted, so a hand-run query parses too.
    """
    gpus = []
    for row in csv.reader(text.splitlines(), skipinitialspace=True):
        if not row or not row[0].strip():
            continue
        if row[0].strip().lower() == "index":
            continue
        if len(row) < len(fields):
            raise ParseError(f"expected {len(fields)} fields, got {row!r}")
        values = dict.fromkeys(QUERY_FIELDS, "")
        values.update(zip(fields, (cell.strip() for cell in row), strict=False))
        index = to_int(values["index"])
        if index is None:
            raise ParseError(f"not a GPU line: {row!r}")
        gpus.append(
            gpu_entry(
                index=index,
                vendor="nvidia",
                model=clean(values["name"]) or "NVIDIA GPU",
                arch=compute_cap_to_arch(values["compute_cap"]),
                memory_bytes=size_to_bytes(values["memory.total"], "MiB"),
                compute_units=None,
                driver=clean(values["driver_version"]),
                uuid=clean(values["uuid"]),
                source="nvidia-smi",
            )
        )
    return gpus


_BANNER = {
    "smi_version": re.compile(r"NVIDIA-SMI(?:\s+version)?\s*:?\s*(\d[\d.]*)", re.IGNORECASE),
    "driver_version": re.compile(r"Driver Version\s*:\s*(\d[\d.]*)", re.IGNORECASE),
    "cuda_version": re.compile(r"CUDA Version\s*:\s*(\d[\d.]*)", re.IGNORECASE),
}


def parse_banner(text: str) -> dict[str, str | None]:
    """smi_version, driver_version and cuda_version from plain ``nvidia-smi`` or ``--version``."""
    found: dict[str, str | None] = {}
    for key, pattern in _BANNER.items():
        match = pattern.search(text)
        found[key] = match.group(1) if match else None
    return found
