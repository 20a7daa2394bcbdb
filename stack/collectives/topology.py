"""The links between the GPUs a job ran on, and the peak those links could carry.

``nvidia-smi topo -m`` prints a matrix: a header of GPU names, then a row per GPU whose
cells say what joins it to each other GPU — ``X`` (itself), ``NV<n>`` (n NVLinks),
``PIX``/``PXB``/``PHB``/``NODE``/``SYS`` (PCIe paths, nearest to farthest). rocm-smi's
``--showtopo`` prints "Link type between two GPUs" as ``XGMI`` or ``PCIE`` per pair.
"""

from __future__ import annotations

import re
from typing import Any

# Interconnect peaks per GPU, both directions together, with their sources.
LINK_PEAKS: dict[str, dict[str, Any]] = {
    "NVLink4 (H100/H200 SXM)": {
        "gbps": 900.0,
        "source": "NVIDIA H200 product brief: NVLink 900 GB/s per GPU (18 NVLink4 links)",
        "match": ("H100", "H200"),
    },
    "xGMI (MI300X)": {
        "gbps": 7 * 64.0,
        "source": "AMD Instinct MI300X data sheet: 7 Infinity Fabric links of 64 GB/s per GPU",
        "match": ("MI300X", "MI325X"),
    },
}


def peak_for(gpu_name: str | None) -> tuple[str, dict[str, Any]] | None:
    for name, row in LINK_PEAKS.items():
        if gpu_name and any(m in gpu_name for m in row["match"]):
            return name, row
    return None


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def parse_nvidia_topo(text: str) -> dict[str, Any]:
    """GPU-to-GPU link cells of ``nvidia-smi topo -m`` (CPU/NIC columns left out).

    nvidia-smi underlines the header with ANSI escapes even into a pipe (seen on the
    lent H200, driver of CUDA 13): they are stripped first.
    """
    text = _ANSI.sub("", text)
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    header = next((line.split() for line in lines if re.match(r"^\s*GPU0\b", line)), None)
    if not header:
        return {"links": {}, "gpus": 0}
    gpus = [h for h in header if re.fullmatch(r"GPU\d+", h)]
    links: dict[str, str] = {}
    for line in lines:
        cells = line.split()
        if len(cells) < 2 or not re.fullmatch(r"GPU\d+", cells[0]):
            continue
        if re.fullmatch(r"GPU\d+", cells[1]):
            continue  # the header line itself
        row_gpu = cells[0]
        for col, cell in zip(gpus, cells[1 : 1 + len(gpus)], strict=False):
            if col != row_gpu and cell != "X":
                pair = "-".join(sorted((row_gpu, col), key=lambda g: int(g[3:])))
                links[pair] = cell
    return {"links": links, "gpus": len(gpus)}


def parse_rocm_topo(text: str) -> dict[str, Any]:
    """The "Link type between two GPUs" block of ``rocm-smi --showtopo``."""
    links: dict[str, str] = {}
    in_block = False
    columns: list[str] = []
    for line in text.splitlines():
        if "Link Type between two GPUs" in line or "Link type between two GPUs" in line:
            in_block, columns = True, []
            continue
        if in_block:
            cells = line.split()
            if not cells:
                continue
            if cells[0].startswith("===="):
                if columns:
                    break
                continue
            if not columns and all(re.fullmatch(r"GPU\d+", c) for c in cells):
                columns = cells
                continue
            if columns and re.fullmatch(r"GPU\d+", cells[0]):
                for col, cell in zip(columns, cells[1:], strict=False):
                    if col != cells[0] and cell not in ("0", "X"):
                        pair = "-".join(sorted((cells[0], col), key=lambda g: int(g[3:])))
                        links[pair] = cell
    return {"links": links, "gpus": len(columns)}
