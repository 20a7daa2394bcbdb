"""The probe kind: an inventory of the machine a job runs on (the work is in stack/probe/)."""

from __future__ import annotations

from typing import Any

from stack.kinds.base import Cap, Kind, RoadmapTask
from stack.probe import TOOL_TIMEOUT_S, TOOLS, TORCH_TIMEOUT_S, probe_host
from stack.runtime import RunContext, RunResult
from stack.tools import INSTALL_HINTS

KIND = Kind(
    name="probe",
    title="Hardware and software probe",
    description=(
        "Inventories the host it runs on: CPU, memory, OS, GPUs (through amd-smi, "
        "rocm-smi, rocminfo, nvidia-smi and PyTorch, whichever are present) and the "
        "ROCm / CUDA / driver versions. Each tool's raw output is kept as an artifact."
    ),
    # What a new user wants first (which GPUs, which ROCm / CUDA), done in seconds on any
    # machine with {} as its parameters: the submit form starts here.
    submit_default=True,
    params_schema={
        "type": "object",
        "properties": {
            "tool_timeout_s": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": 600,
                "default": TOOL_TIMEOUT_S,
                "description": "Limit for each call of a GPU tool.",
            },
            "torch": {
                "type": "boolean",
                "default": True,
                "description": "Also ask PyTorch (in a subprocess) when it is installed.",
            },
            "torch_timeout_s": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": 600,
                "default": TORCH_TIMEOUT_S,
                "description": "Limit for the PyTorch subprocess (importing torch is slow).",
            },
        },
        "additionalProperties": False,
    },
    default_timeout_s=300,
    runner="stack.kinds.probe:run",
    phases=(1,),
    roadmap_tasks=(
        RoadmapTask.HARDWARE_PLAN,
        RoadmapTask.DEV_ENVIRONMENT,
    ),
    install_hints={tool: INSTALL_HINTS[tool] for tool in TOOLS},
    param_caps={"tool_timeout_s": Cap.RUN_SECONDS, "torch_timeout_s": Cap.RUN_SECONDS},
)


def run(params: dict[str, Any], ctx: RunContext) -> RunResult:
    """Inventory the host; always succeeds unless the probe itself breaks."""
    return probe_host(
        ctx,
        tool_timeout_s=float(params["tool_timeout_s"]),
        torch=bool(params["torch"]),
        torch_timeout_s=float(params["torch_timeout_s"]),
    )
