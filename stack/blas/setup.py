"""Setting up a blas-bench run: the machine's fingerprint, each backend, its sampler.

Each backend is set up once (torch / numpy imported, the device found, the
benchmark client located) and shares one telemetry sampler per GPU, so that
backends measured on one device read the same clock record.
"""

from __future__ import annotations

import io
from typing import Any

from stack.blas import blas_tools, telemetry
from stack.blas.bench import Bench
from stack.blas.devices import Device, cpu_device, torch_device
from stack.blas.peaks import lookup
from stack.blas.stats import LoopSettings
from stack.runtime import Artifact, RunContext


def fingerprint(ctx: RunContext) -> tuple[dict[str, Any] | None, list[Artifact], str | None]:
    """The probe's environment fingerprint, taken with the probe's own code.

    The probe's progress events would fight this job's progress bar, so they
    go to a throw-away emitter; its raw tool outputs become this job's
    artifacts under probe/.
    """
    from stack.events import Emitter
    from stack.probe import probe_host

    sub = RunContext(out=ctx.out, emit=Emitter(io.StringIO()), work=ctx.work)
    try:
        result = probe_host(sub)
    except Exception as exc:  # a benchmark without a fingerprint still counts
        return None, [], f"{type(exc).__name__}: {exc}"
    artifacts = [a if isinstance(a, Artifact) else Artifact(**a) for a in result.artifacts]
    return result.environment, artifacts, None


def _tool_device(environment: dict[str, Any] | None, index: int) -> Device:
    """The AMD GPU the ROCm tools will use, described from the fingerprint when there is one."""
    gpus = [g for g in (environment or {}).get("gpus", []) if g.get("vendor") == "amd"]
    gpu = gpus[index] if index < len(gpus) else None
    if gpu is None:
        return Device(kind="cuda", index=index, vendor="amd", peaks=lookup(None, None))
    return Device(
        kind="cuda",
        index=index,
        vendor="amd",
        name=gpu.get("model"),
        arch=gpu.get("arch"),
        uuid=gpu.get("uuid"),
        memory_bytes=gpu.get("memory_bytes"),
        peaks=lookup(gpu.get("model"), gpu.get("arch")),
    )


SamplerKey = tuple[str | None, int]


def gpu_sampler(
    shared: dict[SamplerKey, telemetry.Sampler], device: Device, interval_ms: int
) -> telemetry.Sampler:
    """The run's one sampler for the device's GPU, made on first use.

    Two backends on one GPU (torch on ROCm and rocblas-bench, say) must share
    it: two pollers would double the load on the SMI tool and both write the
    same telemetry artifact.
    """
    key = (device.vendor, telemetry.host_gpu_index(device.vendor, device.index))
    if key not in shared:
        shared[key] = telemetry.make_sampler(device.vendor, device.index, device.uuid, interval_ms)
    return shared[key]


def setup_backend(
    backend: str,
    params: dict[str, Any],
    settings: LoopSettings,
    environment: dict[str, Any] | None,
    samplers: dict[SamplerKey, telemetry.Sampler],
) -> tuple[Bench | None, str | None, str | None]:
    """A Bench for the backend, or (None, why it cannot run); plus the BLAS library's name.

    ``samplers`` is the run's GPU samplers, shared between its backends.
    """
    interval = int(params.get("telemetry_interval_ms", 100))
    common = {
        "params": params,
        "settings": settings,
        "corrupt": bool(params.get("corrupt_output")),
        "check": bool(params.get("check", True)),
        "seed": int(params.get("seed", 0)),
    }
    if backend == "numpy":
        try:
            import numpy as np
        except ImportError as exc:
            return None, f"numpy is not installed ({exc})", None
        from stack.blas.gemm_numpy import library_name

        device = cpu_device()
        sampler = telemetry.null_sampler("CPU run: no GPU telemetry", interval)
        bench = Bench(backend, device=device, sampler=sampler, np=np, **common)
        return bench, None, library_name(np)
    if backend == "torch":
        try:
            import numpy as np
            import torch
        except ImportError as exc:
            return None, f"torch (and numpy) must be installed for the torch backend ({exc})", None
        try:
            device = torch_device(
                torch, str(params.get("device", "auto")), int(params.get("gpu_index", 0))
            )
        except RuntimeError as exc:
            return None, str(exc), None
        if params.get("telemetry", True) and device.kind == "cuda":
            sampler = gpu_sampler(samplers, device, interval)
        else:
            sampler = telemetry.null_sampler(
                "telemetry off" if device.kind == "cuda" else "CPU run: no GPU telemetry", interval
            )
        from stack.blas.gemm_torch import library_name

        bench = Bench(backend, device=device, sampler=sampler, torch=torch, np=np, **common)
        return bench, None, library_name(torch, device)
    if backend in blas_tools.TOOLS:
        from stack.blas.schema import INSTALL_HINTS
        from stack.tools import which

        dirs = blas_tools.search_dirs(backend)
        path = which(backend, dirs)
        if path is None:
            return (
                None,
                f"{backend} not found on PATH or in {', '.join(dirs)} ({INSTALL_HINTS[backend]})",
                None,
            )
        device = _tool_device(environment, int(params.get("gpu_index", 0)))
        if params.get("telemetry", True):
            sampler = gpu_sampler(samplers, device, interval)
        else:
            sampler = telemetry.null_sampler("telemetry off", interval)
        library = "rocBLAS" if backend == blas_tools.ROCBLAS else "hipBLASLt"
        bench = Bench(backend, device=device, sampler=sampler, tool_path=path, **common)
        return bench, None, library
    return None, f"unknown backend {backend!r}", None
