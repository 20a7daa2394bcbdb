"""The inventory of the machine a job runs on: CPU, memory, OS, GPUs, ROCm / CUDA versions.

Every measurement rocpath stores is only comparable with another taken on
the same kind of hardware and software, so this is the fingerprint the rest
relies on: the probe kind reports it, blas-bench records it beside its
numbers, and the worker asks inventory() which GPUs it can hand to jobs. It
asks every GPU tool it can find (amd-smi, rocm-smi, rocminfo, nvidia-smi,
nvcc, PyTorch) and reports honestly: a tool that is absent is ``present:
false``, a tool that fails or hangs is present with its error, and the probe
itself still succeeds. What each tool printed is kept as an artifact, so
anyone can check what was parsed.

report.py asks one tool, gpu_tools.py knows each tool, hostfacts.py reads the
machine, merge.py turns several tools' views into one; this module puts them
together. Light at import time (platform, subprocess and torch load when used).
"""

from __future__ import annotations

import os
from typing import Any

from stack.probe.gpu_tools import PROBES, TOOLS, probe_tool, probe_torch
from stack.probe.hostfacts import host_info
from stack.probe.merge import describe_gpus, merge_gpus, software_info
from stack.probe.report import ToolReport
from stack.runtime import Artifact, RunContext, RunResult

__all__ = [
    "TOOLS",
    "ToolReport",
    "describe_gpus",
    "host_info",
    "inventory",
    "merge_gpus",
    "probe_host",
    "software_info",
]

# The defaults of the probe kind's params (its schema names these).
TOOL_TIMEOUT_S = 20
TORCH_TIMEOUT_S = 60

VISIBILITY_VARIABLES = (
    "ROCR_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "CUDA_VISIBLE_DEVICES",
    "GPU_DEVICE_ORDINAL",
)


def inventory(timeout: float = 10.0) -> dict[str, Any]:
    """The GPUs of this host as the GPU tools see them (no PyTorch, no artifacts).

    Workers call it once to choose GPU passthrough profiles for job containers.
    """
    reports = {name: probe_tool(name, timeout) for name in PROBES}
    return {"gpus": merge_gpus(reports), "software": software_info(reports)}


def probe_host(
    ctx: RunContext,
    *,
    tool_timeout_s: float = TOOL_TIMEOUT_S,
    torch: bool = True,
    torch_timeout_s: float = TORCH_TIMEOUT_S,
) -> RunResult:
    """Inventory the host as the probe kind reports it: environment, summary, raw outputs.

    Always succeeds unless the probe itself breaks. The benchmarks call it for
    their fingerprint, so that both describe a machine with the same code.
    """
    timeout = float(tool_timeout_s)
    steps = len(TOOLS) + 1
    ctx.emit.progress(0, "reading host facts")
    host_facts = host_info()

    reports: dict[str, ToolReport] = {}
    for step, name in enumerate(TOOLS, start=1):
        ctx.emit.progress(100.0 * step / steps, f"asking {name}")
        if name == "torch":
            report = probe_torch(float(torch_timeout_s), bool(torch), str(ctx.out))
        else:
            report = probe_tool(name, timeout)
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
