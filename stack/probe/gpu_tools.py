"""One function per GPU tool (amd-smi, rocm-smi, rocminfo, nvidia-smi, nvcc, PyTorch).

Each gets the tool's path (known present) and returns a ToolReport; none
raises for anything the tool does. PyTorch is asked in a child interpreter, so
that a broken install cannot hurt the probe.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path

from stack.parsers import ParseError, amdsmi, nvcc, nvidiasmi, rocminfo, rocmsmi, torchinfo
from stack.probe.report import ToolReport, call, ok, parse
from stack.tools import rocm_bin_dir, which

# Every tool the probe asks, in the order it asks them.
TOOLS = ("amd-smi", "rocm-smi", "rocminfo", "nvidia-smi", "nvcc", "torch")


def probe_amd_smi(path: str, timeout: float) -> ToolReport:
    """amd-smi: versions, then static (GPUs), then list (UUIDs)."""
    report = ToolReport("amd-smi", present=True, path=path)
    run = call(report, [path, "version"], timeout)
    if run is None:
        return report
    if run.ok:
        versions = amdsmi.parse_version(run.stdout)
        report.version = versions["tool"]
        report.facts["rocm_version"] = versions["rocm"]
        report.facts["driver_version"] = versions["amdgpu"]
        if versions["library"]:
            report.libraries["amdsmi"] = versions["library"]
    run = ok(report, call(report, [path, "static", "--json"], timeout))
    if run is None:
        return report
    report.gpus = parse(report, amdsmi.parse_static, run.stdout) or []
    if report.gpus:
        report.facts["driver_version"] = (
            report.facts.get("driver_version") or report.gpus[0]["driver"]
        )
        run = call(report, [path, "list", "--json"], timeout)
        if run is not None and run.ok:
            try:
                ids = amdsmi.parse_list(run.stdout)
            except (ParseError, ValueError):
                ids = {}
            for gpu in report.gpus:
                gpu["uuid"] = gpu["uuid"] or ids.get(gpu["index"], {}).get("uuid")
    return report


def probe_rocm_smi(path: str, timeout: float) -> ToolReport:
    """rocm-smi: its version, then one JSON query for product, VRAM, driver and unique id."""
    report = ToolReport("rocm-smi", present=True, path=path)
    run = call(report, [path, "--version"], timeout)
    if run is None:
        return report
    if run.ok:
        versions = rocmsmi.parse_version(run.stdout)
        report.version = versions["tool"]
        if versions["library"]:
            report.libraries["rocm-smi-lib"] = versions["library"]
    argv = [
        path,
        "--showproductname",
        "--showmeminfo",
        "vram",
        "--showdriverversion",
        "--showuniqueid",
        "--json",
    ]
    run = ok(report, call(report, argv, timeout))
    if run is None:
        return report
    parsed = parse(report, rocmsmi.parse_json, run.stdout)
    if parsed:
        report.gpus = parsed["gpus"]
        report.facts["driver_version"] = parsed["driver_version"]
    return report


def probe_rocminfo(path: str, timeout: float) -> ToolReport:
    """rocminfo: the HSA agents (GPUs among them), the runtime and ROCk module versions."""
    report = ToolReport("rocminfo", present=True, path=path)
    run = ok(report, call(report, [path], timeout))
    if run is None:
        return report
    parsed = parse(report, rocminfo.parse_rocminfo, run.stdout)
    if parsed:
        report.gpus = rocminfo.gpus_from_report(parsed)
        report.facts["driver_version"] = parsed["rock_module_version"]
        if parsed["runtime_version"]:
            report.libraries["hsa-runtime"] = parsed["runtime_version"]
    return report


def probe_nvidia_smi(path: str, timeout: float) -> ToolReport:
    """nvidia-smi: the GPU query (with a fallback for old drivers), then the banner."""
    report = ToolReport("nvidia-smi", present=True, path=path)
    fields = nvidiasmi.QUERY_FIELDS
    run = call(report, [path, *nvidiasmi.QUERY_ARGS], timeout)
    if run is not None and not run.ok and "compute_cap" in run.stdout + run.stderr:
        fields = nvidiasmi.LEGACY_FIELDS
        run = call(report, [path, *nvidiasmi.LEGACY_QUERY_ARGS], timeout)
    run = ok(report, run)
    if run is None:
        return report
    report.gpus = parse(report, lambda text: nvidiasmi.parse_query_gpu(text, fields), run.stdout)
    report.gpus = report.gpus or []
    run = call(report, [path], timeout)
    if run is not None and run.ok:
        banner = nvidiasmi.parse_banner(run.stdout)
        report.version = banner["smi_version"]
        report.facts["cuda_version"] = banner["cuda_version"]
        report.facts["driver_version"] = banner["driver_version"]
    if not report.facts.get("driver_version") and report.gpus:
        report.facts["driver_version"] = report.gpus[0]["driver"]
    return report


def probe_nvcc(path: str, timeout: float) -> ToolReport:
    """nvcc: the CUDA toolkit's release (the CUDA version of last resort)."""
    report = ToolReport("nvcc", present=True, path=path)
    run = ok(report, call(report, [path, "--version"], timeout))
    if run is None:
        return report
    versions = nvcc.parse_version(run.stdout)
    report.version = versions["version"]
    report.facts["cuda_version"] = versions["release"]
    if versions["version"]:
        report.libraries["cuda-toolkit"] = versions["version"]
    return report


def _torch_location() -> str | bool | None:
    """Where torch is installed, None if it is not, False if finding it failed."""
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return False
    if spec is None:
        return None
    if spec.origin and spec.origin != "namespace":
        return str(Path(spec.origin).parent)
    locations = list(spec.submodule_search_locations or [])
    return locations[0] if locations else ""


def probe_torch(timeout: float, enabled: bool, cwd: str) -> ToolReport:
    """PyTorch, asked in a child interpreter so that a broken install cannot hurt the probe."""
    report = ToolReport("torch")
    location = _torch_location()
    if location is None:
        return report
    report.present = True
    report.path = location or None
    if location is False:
        report.fail("importlib could not look for torch")
        return report
    if not enabled:
        report.fail("not asked: the job's params set torch to false")
        return report
    run = call(
        report,
        [sys.executable, "-c", torchinfo.SCRIPT],
        timeout,
        shown=f"{os.path.basename(sys.executable)} -c <torch probe script>",
        cwd=cwd,
    )
    run = ok(report, run)
    if run is None:
        return report
    info = parse(report, torchinfo.parse_output, run.stdout)
    if not info:
        return report
    report.version = info.get("version")
    if info.get("error"):
        report.fail(str(info["error"]))
    build = torchinfo.backend(info)
    report.facts.update(
        torch_version=info.get("version"),
        torch_backend=build,
        rocm_version=info.get("hip") if build == "rocm" else None,
        cuda_version=info.get("cuda") if build == "cuda" else None,
    )
    for name, version in (info.get("libraries") or {}).items():
        report.libraries[str(name)] = str(version)
    report.gpus = torchinfo.gpus(info)
    return report


def _find(name: str) -> str | None:
    if name == "nvcc":
        cuda = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
        return which(name, (os.path.join(cuda, "bin"),))
    return which(name, (rocm_bin_dir(),))


PROBES: dict[str, Callable[[str, float], ToolReport]] = {
    "amd-smi": probe_amd_smi,
    "rocm-smi": probe_rocm_smi,
    "rocminfo": probe_rocminfo,
    "nvidia-smi": probe_nvidia_smi,
    "nvcc": probe_nvcc,
}


def probe_tool(name: str, timeout: float) -> ToolReport:
    """Ask one GPU tool (not torch) if it is installed; an absent one is an empty report."""
    path = _find(name)
    return PROBES[name](path, timeout) if path else ToolReport(name)
