"""Vendor peak throughput per GPU and precision, to turn a rate into "% of peak".

Figures are the vendors' dense (no structured sparsity) peaks, in TFLOP/s
(TOPS for INT8), and the HBM capacity and bandwidth, as published on each
product's data sheet and compiled in the project's shared reference
(REFERENCE.md, "GPUs: architecture and peak dense throughput"). A dash there
is None here: the chip has no matrix path for that precision (no TF32 on
MI355X or MI250X, no FP8 before MI300 / Hopper).

Lookup is by marketing name first ("AMD Instinct MI300X", "NVIDIA H200",
"NVIDIA A100-SXM4-80GB"), because parts sharing an architecture differ in
clocks, power and memory (H100 SXM vs PCIe vs NVL, MI300X vs MI325X,
MI350X vs MI355X). Only when no name is known is the architecture used, and
then only the figures that every table entry of that architecture agrees on
are returned (sm_90 -> H100/H200 compute peaks, but no HBM figure). A named
GPU that is not in the table gets no peak at all, rather than a neighbour's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

PEAK_KEYS = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8")

_REFERENCE = "rocpath shared REFERENCE.md, table 'GPUs: architecture and peak dense throughput'"


@dataclass(frozen=True)
class GpuPeaks:
    """One row of the peak table."""

    name: str
    arch: str
    peaks: dict[str, float | None]  # precision -> TFLOP/s (TOPS for int8), dense
    memory_gb: float
    hbm_tbps: float
    source: str
    notes: str = ""


def _row(
    name: str,
    arch: str,
    values: tuple[float | None, ...],
    memory_gb: float,
    hbm_tbps: float,
    datasheet: str,
    notes: str = "",
) -> GpuPeaks:
    return GpuPeaks(
        name=name,
        arch=arch,
        peaks=dict(zip(PEAK_KEYS, values, strict=True)),
        memory_gb=memory_gb,
        hbm_tbps=hbm_tbps,
        source=f"{datasheet}; as compiled in {_REFERENCE}",
        notes=notes,
    )


#               fp64    fp32   tf32   fp16/bf16       fp8     int8
PEAK_TABLE: dict[str, GpuPeaks] = {
    row.name: row
    for row in (
        _row(
            "MI355X",
            "gfx950",
            (78.6, 157.3, None, 2500.0, 2500.0, 5000.0, 5000.0),
            288,
            8.0,
            "AMD Instinct MI355X data sheet (dense matrix peaks)",
            "CDNA4 dropped the XF32 (TF32) matrix path",
        ),
        _row(
            "MI325X",
            "gfx942",
            (163.4, 163.4, 653.7, 1307.4, 1307.4, 2614.9, 2614.9),
            256,
            6.0,
            "AMD Instinct MI325X data sheet (dense matrix peaks)",
        ),
        _row(
            "MI300X",
            "gfx942",
            (163.4, 163.4, 653.7, 1307.4, 1307.4, 2614.9, 2614.9),
            192,
            5.3,
            "AMD Instinct MI300X data sheet (dense matrix peaks)",
        ),
        _row(
            "MI250X",
            "gfx90a",
            (95.7, 95.7, None, 383.0, 383.0, None, 383.0),
            128,
            3.2,
            "AMD Instinct MI250X data sheet (dense matrix peaks, both dies)",
        ),
        _row(
            "H200",
            "sm_90",
            (66.9, 66.9, 494.7, 989.4, 989.4, 1978.9, 1978.9),
            141,
            4.8,
            "NVIDIA H200 Tensor Core GPU data sheet, SXM (dense: half the sparsity figures)",
            "FP32 is the CUDA-core rate; FP64 the tensor-core rate",
        ),
        _row(
            "H100 SXM",
            "sm_90",
            (66.9, 66.9, 494.7, 989.4, 989.4, 1978.9, 1978.9),
            80,
            3.35,
            "NVIDIA H100 Tensor Core GPU data sheet, SXM5 (dense: half the sparsity figures)",
            "FP32 is the CUDA-core rate; FP64 the tensor-core rate",
        ),
        _row(
            "A100 SXM",
            "sm_80",
            (19.5, 19.5, 156.0, 312.0, 312.0, None, 624.0),
            80,
            2.0,
            "NVIDIA A100 Tensor Core GPU data sheet, SXM4 80GB (dense)",
            "FP32 is the CUDA-core rate; FP64 the tensor-core rate",
        ),
    )
}

# Names that a tool may print for each table row: (row, required tokens, forbidden tokens).
# Tokens are matched against the upper-cased name with spaces, dashes and
# underscores removed ("NVIDIA A100-SXM4-80GB" -> "NVIDIAA100SXM480GB").
_NAME_RULES: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("MI355X", ("MI355X",), ()),
    ("MI325X", ("MI325X",), ()),
    ("MI300X", ("MI300X",), ()),
    ("MI250X", ("MI250X",), ()),
    ("H200", ("H200",), ("NVL", "PCIE")),
    ("H100 SXM", ("H100", "SXM"), ("PCIE", "NVL")),
    ("H100 SXM", ("H100", "HBM3"), ("PCIE", "NVL")),  # nvidia-smi: "NVIDIA H100 80GB HBM3"
    ("A100 SXM", ("A100", "SXM"), ("PCIE",)),
)

# Names that carry no model (torch on an unknown device, a tool's fallback).
_GENERIC = re.compile(r"^(AMD|NVIDIA)?\s*(GPU|DEVICE)?\s*(\d+|0X[0-9A-F]+)?$", re.IGNORECASE)


@dataclass
class PeakMatch:
    """What the table says about one device, and how sure the match is."""

    gpu: str | None
    matched_by: str | None  # "name", "arch" or None
    peaks: dict[str, float | None] = field(default_factory=dict)
    hbm_tbps: float | None = None
    memory_gb: float | None = None
    source: str | None = None
    note: str = ""

    def peak(self, precision: str) -> float | None:
        """Dense vendor peak for a precision (TFLOP/s, TOPS for int8), or None."""
        return self.peaks.get(precision)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form for a result's summary."""
        return {
            "gpu": self.gpu,
            "matched_by": self.matched_by,
            "peaks_tflops": dict(self.peaks),
            "hbm_tbps": self.hbm_tbps,
            "memory_gb": self.memory_gb,
            "source": self.source,
            "note": self.note,
        }


def _squash(name: str) -> str:
    return re.sub(r"[\s_\-/]+", "", name.upper())


def match_name(name: str | None) -> str | None:
    """The table row a marketing name denotes, or None."""
    if not name:
        return None
    squashed = _squash(name)
    for row, required, forbidden in _NAME_RULES:
        if all(tok in squashed for tok in required) and not any(
            tok in squashed for tok in forbidden
        ):
            return row
    return None


def _normal_arch(arch: str | None) -> str | None:
    if not arch:
        return None
    arch = arch.strip().lower().split(":", 1)[0]  # "gfx942:sramecc+:xnack-" -> "gfx942"
    return arch or None


def lookup(name: str | None = None, arch: str | None = None) -> PeakMatch:
    """Peaks for a device named ``name`` with architecture ``arch`` (either may be None)."""
    row_name = match_name(name)
    if row_name is not None:
        row = PEAK_TABLE[row_name]
        note = row.notes
        hbm: float | None = row.hbm_tbps
        memory: float | None = row.memory_gb
        squashed = _squash(name or "")
        if row_name == "A100 SXM" and "40GB" in squashed:
            hbm, memory = None, 40
            note = "A100 SXM4 40GB: same compute peaks, slower HBM2 (not in the table)"
        if row_name == "MI250X" and "MI250XMI250" in squashed:
            note = "the name does not tell MI250X from MI250; MI250X peaks used"
        return PeakMatch(
            gpu=row.name,
            matched_by="name",
            peaks=dict(row.peaks),
            hbm_tbps=hbm,
            memory_gb=memory,
            source=row.source,
            note=note,
        )
    if name and not _GENERIC.match(name.strip()):
        return PeakMatch(
            gpu=None,
            matched_by=None,
            note=f"{name!r} is not in the peak table; no % of peak is reported",
        )
    arch = _normal_arch(arch)
    rows = [row for row in PEAK_TABLE.values() if row.arch == arch]
    if not rows:
        return PeakMatch(gpu=None, matched_by=None, note=f"no peak known for arch {arch!r}")
    peaks: dict[str, float | None] = {}
    for key in PEAK_KEYS:
        values = {row.peaks[key] for row in rows}
        peaks[key] = values.pop() if len(values) == 1 else None
    hbms = {row.hbm_tbps for row in rows}
    names = [row.name for row in rows]
    return PeakMatch(
        gpu=names[0] if len(names) == 1 else "/".join(names),
        matched_by="arch",
        peaks=peaks,
        hbm_tbps=hbms.pop() if len(hbms) == 1 else None,
        memory_gb=rows[0].memory_gb if len(rows) == 1 else None,
        source=rows[0].source if len(rows) == 1 else _REFERENCE,
        note=(
            f"matched by architecture {arch} only ({', '.join(names)}); other parts of "
            "that architecture (PCIe, NVL, MI300A, MI250...) have lower peaks"
        ),
    )
