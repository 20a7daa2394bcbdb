"""What several tools said, merged: one record per GPU, one version per package.

Tools number GPUs independently and each knows different fields, so the richest
source of a vendor leads and the others fill its gaps; versions come from the
most trustworthy source that has them.
"""

from __future__ import annotations

from typing import Any

from stack.probe.hostfacts import read_text, rocm_version_from_install
from stack.probe.report import ToolReport

# Which source wins when several saw the same GPUs (richer first).
AMD_SOURCES = ("amd-smi", "rocm-smi", "rocminfo")
NVIDIA_SOURCES = ("nvidia-smi",)

_ENRICHABLE = ("arch", "memory_bytes", "compute_units", "driver", "uuid")


def _enrich(primary: list[dict[str, Any]], other: list[dict[str, Any]]) -> None:
    """Fill the primary source's unknown fields from another source that saw the same GPUs.

    Tools number GPUs independently, so the lists are matched by position,
    and only when both saw as many GPUs and agree on each one's architecture.
    """
    if len(primary) != len(other):
        return
    for mine, theirs in zip(primary, other, strict=True):
        if mine["arch"] and theirs["arch"] and mine["arch"] != theirs["arch"]:
            return
    for mine, theirs in zip(primary, other, strict=True):
        for key in _ENRICHABLE:
            if mine[key] is None and theirs[key] is not None:
                mine[key] = theirs[key]


def merge_gpus(reports: dict[str, ToolReport]) -> list[dict[str, Any]]:
    """One record per GPU: the best source for each vendor, gaps filled from the others.

    torch's view is used alone only when no tool of that vendor saw a GPU.
    """
    torch_gpus = reports["torch"].gpus if "torch" in reports else []
    merged: list[dict[str, Any]] = []
    for vendor, sources in (("amd", AMD_SOURCES), ("nvidia", NVIDIA_SOURCES)):
        lists = [
            [dict(gpu) for gpu in reports[name].gpus if gpu["vendor"] == vendor]
            for name in sources
            if name in reports and reports[name].gpus
        ]
        from_torch = [dict(gpu) for gpu in torch_gpus if gpu["vendor"] == vendor]
        if not lists:
            merged.extend(from_torch)
            continue
        best = lists[0]
        for other in [*lists[1:], from_torch]:
            _enrich(best, other)
        merged.extend(best)
    return merged


def _first(*values: Any) -> Any:
    return next((value for value in values if value), None)


def software_info(reports: dict[str, ToolReport]) -> dict[str, Any]:
    """ROCm / CUDA / driver / torch versions, each from the most trustworthy source."""

    def fact(tool: str, key: str) -> Any:
        report = reports.get(tool)
        return report.facts.get(key) if report else None

    libraries: dict[str, str] = {}
    for report in reports.values():
        libraries.update(report.libraries)
    driver = _first(
        fact("amd-smi", "driver_version"),
        fact("rocm-smi", "driver_version"),
        fact("rocminfo", "driver_version"),
        (read_text("/sys/module/amdgpu/version") or "").strip(),
        fact("nvidia-smi", "driver_version"),
    )
    return {
        "rocm_version": _first(
            rocm_version_from_install(),
            fact("amd-smi", "rocm_version"),
            fact("torch", "rocm_version"),
        ),
        "cuda_version": _first(
            fact("nvidia-smi", "cuda_version"),
            fact("torch", "cuda_version"),
            fact("nvcc", "cuda_version"),
        ),
        "gpu_driver_version": driver,
        "torch_version": fact("torch", "torch_version"),
        "torch_backend": fact("torch", "torch_backend"),
        "libraries": libraries,
    }


def describe_gpus(gpus: list[dict[str, Any]]) -> list[str]:
    """["8x AMD Instinct MI300X (gfx942)", ...], in the order the GPUs were found."""
    counts: dict[tuple[str, str | None], int] = {}
    for gpu in gpus:
        key = (gpu["model"], gpu["arch"])
        counts[key] = counts.get(key, 0) + 1
    return [
        f"{count}x {model}" + (f" ({arch})" if arch else "")
        for (model, arch), count in counts.items()
    ]
