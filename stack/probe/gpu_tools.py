"""The probe kind: an inventory of the machine a job runs on.

Every measurement rocpath stores is only comparable with another taken on
the same kind of hardware and software, so this is the fingerprint the rest
relies on. It asks every GPU tool it can find (amd-smi, rocm-smi, rocminfo,
nvidia-smi, nvcc, PyTorch) and reports honestly: a tool that is absent is
``present: false``, a tool that fails or hangs is present with its error,
and the probe itself still succeeds. What each tool printed is kept as an
artifact, so anyone can check what was parsed.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stack.parsers import ParseError, amdsmi, host, nvcc, nvidiasmi, rocminfo, rocmsmi, torchinfo
from stack.runtime import Artifact, RunContext, RunResult
from stack.tools import ToolError, ToolRun, ToolTimeout, rocm_bin_dir, run_tool, which

TOOLS = ("amd-smi", "rocm-smi", "rocminfo", "nvidia-smi", "nvcc", "torch")

# Which source wins when several saw the same GPUs (richer first).
AMD_SOURCES = ("amd-smi", "rocm-smi", "rocminfo")
NVIDIA_SOURCES = ("nvidia-smi",)

VISIBILITY_VARIABLES = (
    "ROCR_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "CUDA_VISIBLE_DEVICES",
    "GPU_DEVICE_ORDINAL",
)


@dataclass
class ToolReport:
    """What one tool told the probe, and how asking it went."""

    name: str
    present: bool = False
    path: str | None = None
    version: str | None = None
    error: str | None = None
    gpus: list[dict[str, Any]] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    libraries: dict[str, str] = field(default_factory=dict)
    transcript: list[str] = field(default_factory=list)

    def fail(self, message: str) -> None:
        """Keep the first error: later ones are usually its consequences."""
        if self.error is None:
            self.error = message

    def status(self) -> dict[str, Any]:
        """The environment's ``tools`` entry."""
        return {
            "present": self.present,
            "path": self.path,
            "version": self.version,
            "error": self.error,
        }


def _exit_text(run: ToolRun) -> str:
    if run.returncode < 0:
        import signal

        try:
            name = signal.Signals(-run.returncode).name
        except ValueError:
            name = f"signal {-run.returncode}"
        reason = f"killed by {name}"
    else:
        reason = f"exit status {run.returncode}"
    line = run.first_line()
    return f"{reason}: {line}" if line else reason


def _call(
    report: ToolReport,
    argv: list[str],
    timeout: float,
    *,
    shown: str | None = None,
    cwd: str | None = None,
) -> ToolRun | None:
    """Run one command of a tool, keeping its transcript; None if it could not finish."""
    display = shown or " ".join(argv)
    try:
        run = run_tool(argv, timeout, cwd=cwd, extra_dirs=())
    except ToolTimeout as exc:
        report.transcript.append(
            f"$ {display}\n# timed out after {timeout:g} s and was killed\n"
            f"# --- stdout ---\n{exc.stdout}\n# --- stderr ---\n{exc.stderr}\n"
        )
        report.fail(f"timed out after {timeout:g} s ({display})")
        return None
    except (ToolError, OSError) as exc:
        report.transcript.append(f"$ {display}\n# could not run: {exc}\n")
        report.fail(f"could not run {display}: {exc}")
        return None
    transcript = run.transcript()
    if shown:
        transcript = transcript.replace(" ".join(run.argv), shown, 1)
    report.transcript.append(transcript)
    return run


def _ok(report: ToolReport, run: ToolRun | None) -> ToolRun | None:
    """The run if it exited 0; else None, with the exit status kept as the report's error."""
    if run is not None and not run.ok:
        report.fail(_exit_text(run))
        return None
    return run


def _parse(report: ToolReport, parser: Callable[[str], Any], text: str) -> Any:
    try:
        return parser(text)
    except (ParseError, ValueError, KeyError, TypeError, AttributeError) as exc:
        report.fail(f"could not parse its output: {exc}")
        return None


# --------------------------------------------------------------------------
# One function per tool. Each gets the tool's path (known present) and returns
# a ToolReport; none raises for anything the tool does.
# --------------------------------------------------------------------------


def probe_amd_smi(path: str, timeout: float) -> ToolReport:
    """amd-smi: versions, then static (GPUs), then list (UUIDs)."""
    report = ToolReport("amd-smi", present=True, path=path)
    run = _call(report, [path, "version"], timeout)
    if run is None:
        return report
    if run.ok:
        versions = amdsmi.parse_version(run.stdout)
        report.version = versions["tool"]
        report.facts["rocm_version"] = versions["rocm"]
        report.facts["driver_version"] = versions["amdgpu"]
        if versions["library"]:
            report.libraries["amdsmi"] = versions["library"]
    run = _ok(report, _call(report, [path, "static", "--json"], timeout))
    if run is None:
        return report
    report.gpus = _parse(report, amdsmi.parse_static, run.stdout) or []
    if report.gpus:
        report.facts["driver_version"] = (
            report.facts.get("driver_version") or report.gpus[0]["driver"]
        )
        run = _call(report, [path, "list", "--json"], timeout)
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
    run = _call(report, [path, "--version"], timeout)
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
    run = _ok(report, _call(report, argv, timeout))
    if run is None:
        return report
    parsed = _parse(report, rocmsmi.parse_json, run.stdout)
    if parsed:
        report.gpus = parsed["gpus"]
        report.facts["driver_version"] = parsed["driver_version"]
    return report


def probe_rocminfo(path: str, timeout: float) -> ToolReport:
    """rocminfo: the HSA agents (GPUs among them), the runtime and ROCk module versions."""
    report = ToolReport("rocminfo", present=True, path=path)
    run = _ok(report, _call(report, [path], timeout))
    if run is None:
        return report
    parsed = _parse(report, rocminfo.parse_rocminfo, run.stdout)
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
    run = _call(report, [path, *nvidiasmi.QUERY_ARGS], timeout)
    if run is not None and not run.ok and "compute_cap" in run.stdout + run.stderr:
        fields = nvidiasmi.LEGACY_FIELDS
        run = _call(report, [path, *nvidiasmi.LEGACY_QUERY_ARGS], timeout)
    run = _ok(report, run)
    if run is None:
        return report
    report.gpus = _parse(report, lambda text: nvidiasmi.parse_query_gpu(text, fields), run.stdout)
    report.gpus = report.gpus or []
    run = _call(report, [path], timeout)
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
    run = _ok(report, _call(report, [path, "--version"], timeout))
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
    run = _call(
        report,
        [sys.executable, "-c", torchinfo.SCRIPT],
        timeout,
        shown=f"{os.path.basename(sys.executable)} -c <torch probe script>",
        cwd=cwd,
    )
    run = _ok(report, run)
    if run is None:
        return report
    info = _parse(report, torchinfo.parse_output, run.stdout)
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


# --------------------------------------------------------------------------
# Host facts
# --------------------------------------------------------------------------


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def host_info() -> dict[str, Any]:
    """CPU, memory, OS, kernel, architecture and Python of the machine (or container)."""
    uname = os.uname()
    os_release = _read("/etc/os-release") or _read("/usr/lib/os-release") or ""
    cpuinfo = _read("/proc/cpuinfo") or ""
    meminfo = _read("/proc/meminfo") or ""
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
    limit = (_read("/sys/fs/cgroup/memory.max") or "").strip()
    info["memory_limit_bytes"] = int(limit) if limit.isdigit() else None
    return info


def rocm_version_from_install() -> str | None:
    """The installed ROCm release, from $ROCM_PATH/.info/version (the images' layout)."""
    root = os.environ.get("ROCM_PATH") or "/opt/rocm"
    text = _read(os.path.join(root, ".info", "version"))
    return text.strip().splitlines()[0].strip() if text and text.strip() else None


# --------------------------------------------------------------------------
# Merging what the tools said
# --------------------------------------------------------------------------

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
        (_read("/sys/module/amdgpu/version") or "").strip(),
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


# --------------------------------------------------------------------------
# The runner
# --------------------------------------------------------------------------


def _find(name: str) -> str | None:
    if name == "nvcc":
        cuda = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
        return which(name, (os.path.join(cuda, "bin"),))
    return which(name, (rocm_bin_dir(),))


_PROBES: dict[str, Callable[[str, float], ToolReport]] = {
    "amd-smi": probe_amd_smi,
    "rocm-smi": probe_rocm_smi,
    "rocminfo": probe_rocminfo,
    "nvidia-smi": probe_nvidia_smi,
    "nvcc": probe_nvcc,
}


def _probe_tool(name: str, timeout: float) -> ToolReport:
    """Ask one GPU tool (not torch) if it is installed; an absent one is an empty report."""
    path = _find(name)
    return _PROBES[name](path, timeout) if path else ToolReport(name)


def inventory(timeout: float = 10.0) -> dict[str, Any]:
    """The GPUs of this host as the GPU tools see them (no PyTorch, no artifacts).

    Workers call it once to choose GPU passthrough profiles for job containers.
    """
    reports = {name: _probe_tool(name, timeout) for name in _PROBES}
    return {"gpus": merge_gpus(reports), "software": software_info(reports)}


def run(params: dict[str, Any], ctx: RunContext) -> RunResult:
    """Inventory the host; always succeeds unless the probe itself breaks."""
    timeout = float(params["tool_timeout_s"])
    steps = len(TOOLS) + 1
    ctx.emit.progress(0, "reading host facts")
    host_facts = host_info()

    reports: dict[str, ToolReport] = {}
    for step, name in enumerate(TOOLS, start=1):
        ctx.emit.progress(100.0 * step / steps, f"asking {name}")
        if name == "torch":
            report = probe_torch(
                float(params["torch_timeout_s"]), bool(params["torch"]), str(ctx.out)
            )
        else:
            report = _probe_tool(name, timeout)
        reports[name] = report
        if not report.present:
            ctx.emit.log(f"{name}: not installed")
        elif report.error:
            ctx.emit.log(f"{name}: {report.error}", level="warning")
        else:
            ctx.emit.log(f"{name}: {report.version or 'present'}, {len(report.gpus)} GPU(s)")

    artifacts: list[Artifact] = []
    for name, report in reports.items():
        if report.transcript:
            artifacts.append(
                ctx.write_artifact(
                    f"probe/{name}.txt",
                    "\n".join(report.transcript),
                    description=f"what {name} printed when the probe ran it",
                )
            )

    gpus = merge_gpus(reports)
    visible = {var: os.environ[var] for var in VISIBILITY_VARIABLES if var in os.environ}
    environment = {
        "host": host_facts,
        "gpus": gpus,
        "software": software_info(reports),
        "tools": {name: report.status() for name, report in reports.items()},
        "visible_devices": visible,
    }
    ctx.emit.progress(100, "probe complete")
    summary = {
        "cpu": host_facts["cpu_model"],
        "cpu_cores": host_facts["cpu_cores"],
        "memory_bytes": host_facts["memory_bytes"],
        "os": host_facts["os"],
        "gpu_count": len(gpus),
        "gpus": describe_gpus(gpus),
        "rocm_version": environment["software"]["rocm_version"],
        "cuda_version": environment["software"]["cuda_version"],
        "tools_present": [name for name, r in reports.items() if r.present],
        "tools_absent": [name for name, r in reports.items() if not r.present],
        "tool_errors": {name: r.error for name, r in reports.items() if r.error},
    }
    return RunResult(environment=environment, summary=summary, artifacts=artifacts)
