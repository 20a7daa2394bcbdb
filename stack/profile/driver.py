"""Run one workload in a process of its own: ``python -m stack.profile.driver SPEC.json``.

The runner starts this once under the PyTorch profiler and again wrapped by ncu or
rocprofv3, so every profiler sees the same workload, and a script that crashes, exits
or leaks threads takes only this process with it. SPEC (written by runner.py) names the
workload, the device, whether the PyTorch profiler wraps the steps, whether
cudaProfilerStart/Stop bound them (ncu's ``--profile-from-start off``), and the folder
for ``driver.json`` (device, step times, key_averages) and ``trace.json``.

Exit status 0 when the workload ran, 1 when it raised or exited non-zero (the reason in
driver.json), 2 for a spec this module cannot read.
"""

from __future__ import annotations

import os
import runpy
import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from stack.child import drive

TRACE_FILE = "trace.json"
DTYPE_NAMES = {"fp64": "float64", "fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}


class ScriptExit(Exception):
    """The script called sys.exit with a non-zero status."""


def pick_device(torch: Any, asked: str) -> Any:
    """The GPU PyTorch sees (CUDA or ROCm: the same API), unless the CPU was asked for."""
    if asked != "cpu" and torch.cuda.is_available():
        return torch.device("cuda", 0)
    return torch.device("cpu")


def describe_device(torch: Any, device: Any) -> dict[str, Any]:
    """What ran the workload, as the runner needs it to pick a vendor's profiler."""
    info: dict[str, Any] = {
        "type": device.type,
        "torch_version": torch.__version__,
        "backend": "cpu",
        "vendor": None,
        "name": None,
    }
    if device.type == "cuda":
        hip = getattr(torch.version, "hip", None)
        info["backend"] = "rocm" if hip else "cuda"
        info["vendor"] = "amd" if hip else "nvidia"
        info["name"] = torch.cuda.get_device_name(device)
    return info


def gemm_step(torch: Any, device: Any, spec: dict[str, Any]) -> Callable[[], Any]:
    """C = A·B, with A and B drawn in their own precision (full-entropy operands: a GEMM's
    speed depends on the data it is fed, issue 15)."""
    dtype = getattr(torch, DTYPE_NAMES[spec["dtype"]])
    generator = torch.Generator(device=device).manual_seed(0)
    a = torch.randn(spec["m"], spec["k"], dtype=dtype, device=device, generator=generator)
    b = torch.randn(spec["k"], spec["n"], dtype=dtype, device=device, generator=generator)
    return lambda: torch.matmul(a, b)


def transformer_step(torch: Any, device: Any, spec: dict[str, Any]) -> Callable[[], Any]:
    """One pre-norm transformer block, forward: LayerNorm, QKV projection, causal
    scaled-dot-product attention, output projection, LayerNorm, GELU MLP (4x width)."""
    nn = torch.nn
    functional = torch.nn.functional
    dtype = getattr(torch, DTYPE_NAMES[spec["dtype"]])
    d_model, heads = spec["d_model"], spec["heads"]

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1 = nn.LayerNorm(d_model)
            self.qkv = nn.Linear(d_model, 3 * d_model)
            self.proj = nn.Linear(d_model, d_model)
            self.ln2 = nn.LayerNorm(d_model)
            self.fc1 = nn.Linear(d_model, 4 * d_model)
            self.fc2 = nn.Linear(4 * d_model, d_model)

        def forward(self, x: Any) -> Any:
            batch, seq, width = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(width, dim=-1)
            shape = (batch, seq, heads, width // heads)
            q, k, v = (t.reshape(shape).transpose(1, 2) for t in (q, k, v))
            attention = functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(attention.transpose(1, 2).reshape(batch, seq, width))
            return x + self.fc2(functional.gelu(self.fc1(self.ln2(x))))

    torch.manual_seed(0)
    block = Block().to(device=device, dtype=dtype).eval()
    x = torch.randn(spec["batch"], spec["seq_len"], d_model, dtype=dtype, device=device)

    def step() -> Any:
        with torch.inference_mode():
            return block(x)

    return step


def script_step(spec: dict[str, Any]) -> Callable[[], Any]:
    """The script run as ``python SCRIPT ARGS`` would: as __main__, its folder on sys.path,
    the source tree as the working folder."""
    path = spec["script"]

    def step() -> None:
        sys.argv = [path, *spec.get("script_args", [])]
        sys.path.insert(0, os.path.dirname(path))
        os.chdir(spec["cwd"])
        try:
            runpy.run_path(path, run_name="__main__")
        except SystemExit as exc:
            if exc.code not in (None, 0):
                raise ScriptExit(f"the script exited with status {exc.code!r}") from None

    return step


def profiler_for(torch: Any, device: Any, spec: dict[str, Any]) -> AbstractContextManager[Any]:
    """The PyTorch profiler over the steps (CPU activity, and the GPU's where there is one)."""
    if not spec.get("torch_profiler"):
        return nullcontext()
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    return torch.profiler.profile(
        activities=activities, record_shapes=bool(spec.get("record_shapes"))
    )


def run(spec: dict[str, Any]) -> dict[str, Any]:
    """Run the workload as the spec asks and say how it went (what driver.json holds)."""
    import torch

    from stack.profile.torch_profiler import key_average_rows

    out = Path(spec["out_dir"])
    device = pick_device(torch, spec.get("device", "auto"))
    report: dict[str, Any] = {"ok": False, "device": describe_device(torch, device)}

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    workload = spec["workload"]
    if workload == "script":
        step, steps, warmup = script_step(spec), 1, 0
    else:
        build = gemm_step if workload == "gemm" else transformer_step
        step, steps, warmup = build(torch, device, spec), spec["iterations"], spec["warmup"]
    for _ in range(warmup):
        step()
    sync()
    ranged = bool(spec.get("ranged")) and device.type == "cuda"
    times: list[float] = []
    profiler = profiler_for(torch, device, spec)
    with profiler as prof:
        if ranged:
            torch.cuda.profiler.start()
        for _ in range(steps):
            started = time.perf_counter()
            step()
            sync()
            times.append((time.perf_counter() - started) * 1000.0)
        if ranged:
            torch.cuda.profiler.stop()
    report["step_times_ms"] = times
    if prof is not None:
        report["key_averages"] = key_average_rows(prof.key_averages())
        prof.export_chrome_trace(str(out / TRACE_FILE))
        report["trace"] = TRACE_FILE
    report["ok"] = True
    return report


def main(argv: list[str]) -> int:
    """Read the spec, run, write driver.json (stack.child.drive)."""
    return drive(argv, run, "stack.profile.driver")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
