"""Which device a job measures on, and the facts about it the benchmarks need.

The torch backend runs on whatever ``torch.cuda`` reaches (an NVIDIA GPU on
a CUDA build, an AMD GPU on a ROCm build: the API is the same) or on the
CPU. Everything here takes the torch module as an argument so that this file
imports nothing heavy itself.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from stack.blas import peaks
from stack.parsers.host import parse_cpu_model


@dataclass
class Device:
    """The device one backend measures on."""

    kind: str  # "cuda" (CUDA or ROCm through torch.cuda) or "cpu"
    index: int = 0
    vendor: str | None = None  # "nvidia", "amd" or None (CPU)
    name: str | None = None
    arch: str | None = None
    uuid: str | None = None
    memory_bytes: int | None = None
    l2_bytes: int | None = None
    torch_backend: str | None = None  # "cuda", "rocm", "cpu"
    peaks: peaks.PeakMatch = field(default_factory=lambda: peaks.PeakMatch(None, None))

    @property
    def label(self) -> str:
        """ "cuda:0" or "cpu" (what goes into a measurement's case)."""
        return f"cuda:{self.index}" if self.kind == "cuda" else "cpu"

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form for the summary."""
        return {
            "device": self.label,
            "vendor": self.vendor,
            "name": self.name,
            "arch": self.arch,
            "uuid": self.uuid,
            "memory_bytes": self.memory_bytes,
            "l2_bytes": self.l2_bytes,
            "torch_backend": self.torch_backend,
            "peaks": self.peaks.as_dict(),
        }


def _cpu_name() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            return parse_cpu_model(f.read())
    except OSError:
        return None


def cpu_last_level_cache_bytes() -> int | None:
    """Size of the CPU's largest cache (what a cold-cache run must overflow)."""
    best = None
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        entries = os.listdir(base)
    except OSError:
        return None
    for entry in entries:
        try:
            with open(os.path.join(base, entry, "size"), encoding="ascii") as f:
                text = f.read().strip().upper()
        except OSError:
            continue
        factor = {"K": 1024, "M": 1024**2, "G": 1024**3}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            size = int(digits) * factor
            best = size if best is None or size > best else best
    return best


def cpu_device() -> Device:
    """The host CPU (no vendor peak: the table holds GPUs only)."""
    return Device(
        kind="cpu",
        name=_cpu_name(),
        torch_backend="cpu",
        l2_bytes=cpu_last_level_cache_bytes(),
        peaks=peaks.PeakMatch(None, None, note="CPU: no vendor peak in the table"),
    )


def torch_backend_of(torch: Any) -> str:
    """ "rocm", "cuda" or "cpu" for the torch build."""
    if getattr(torch.version, "hip", None):
        return "rocm"
    if getattr(torch.version, "cuda", None):
        return "cuda"
    return "cpu"


def torch_device(torch: Any, requested: str, index: int = 0) -> Device:
    """The device the torch backend will use for ``device`` = auto | gpu | cpu.

    Raises RuntimeError when a GPU is asked for and torch sees none.
    """
    build = torch_backend_of(torch)
    has_gpu = bool(torch.cuda.is_available()) and torch.cuda.device_count() > index
    if requested == "cpu" or (requested == "auto" and not has_gpu):
        device = cpu_device()
        device.torch_backend = build
        return device
    if not has_gpu:
        raise RuntimeError(
            f"a GPU was asked for (device={requested!r}, gpu_index={index}) but torch "
            f"{torch.__version__} ({build} build) sees {torch.cuda.device_count()} GPU(s)"
        )
    props = torch.cuda.get_device_properties(index)
    if build == "rocm":
        arch = str(getattr(props, "gcnArchName", "") or "").split(":", 1)[0] or None
        vendor = "amd"
    else:
        arch = f"sm_{props.major}{props.minor}"
        vendor = "nvidia"
    uuid = getattr(props, "uuid", None)
    uuid_text = str(uuid) if uuid is not None else None
    if uuid_text and vendor == "nvidia" and not uuid_text.startswith("GPU-"):
        uuid_text = f"GPU-{uuid_text}"
    l2 = getattr(props, "L2_cache_size", None)
    return Device(
        kind="cuda",
        index=index,
        vendor=vendor,
        name=str(props.name),
        arch=arch,
        uuid=uuid_text,
        memory_bytes=int(props.total_memory),
        l2_bytes=int(l2) if isinstance(l2, int) and l2 > 0 else None,
        torch_backend=build,
        peaks=peaks.lookup(str(props.name), arch),
    )


def free_memory_bytes(torch: Any | None, device: Device) -> int | None:
    """Memory the device has free now (GPU: the driver's figure; CPU: MemAvailable)."""
    if device.kind == "cuda" and torch is not None:
        try:
            free, _total = torch.cuda.mem_get_info(device.index)
            return int(free)
        except Exception:  # an estimate; None means "unknown"
            return None
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


class TorchTimer:
    """Times a block of calls on a torch device.

    GPU: events recorded on the current stream before and after the block,
    read after synchronising on the end event: device time only. Before the
    start event the stream gets a short spin kernel (``torch.cuda._sleep``)
    that keeps the GPU busy while Python queues the block's calls, so that
    the calls run back to back even when one kernel is shorter than a launch
    (without it a 3 us GEMM would be timed at the launch rate). CPU:
    perf_counter around the block (torch CPU ops are synchronous).
    """

    LAUNCH_ALLOWANCE_S = 20e-6  # host time to queue one call, generously
    MAX_SPIN_S = 0.05

    def __init__(self, torch: Any, device: Device) -> None:
        self.torch = torch
        self.device = device
        self._cycles_per_s: float | None = None
        self.spin = device.kind == "cuda" and hasattr(torch.cuda, "_sleep")
        self.method = (
            "device events (torch.cuda.Event) around blocks of back-to-back calls"
            + (", queued behind a spin kernel so they run back to back" if self.spin else "")
            if device.kind == "cuda"
            else "time.perf_counter around blocks of synchronous calls"
        )

    def cycles_per_second(self) -> float:
        """How fast torch.cuda._sleep spins (measured once, with events)."""
        if self._cycles_per_s is None:
            torch = self.torch
            cycles = 5_000_000
            torch.cuda._sleep(cycles)  # first call may compile/load
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            torch.cuda._sleep(cycles)
            end.record()
            end.synchronize()
            seconds = max(start.elapsed_time(end) / 1000.0, 1e-6)
            self._cycles_per_s = cycles / seconds
        return self._cycles_per_s

    def block(self, call: Any) -> Any:
        """A ``time_blocks(inner, count)`` function for stats.adaptive_loop."""
        torch = self.torch
        if self.device.kind != "cuda":
            from stack.blas.stats import cpu_blocks

            return cpu_blocks(call)
        spin = self.spin
        cycles_per_s = self.cycles_per_second() if spin else 0.0

        def time_blocks(inner: int, count: int) -> list[float]:
            events = [
                (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                for _ in range(count)
            ]
            if spin:
                seconds = min(inner * count * self.LAUNCH_ALLOWANCE_S, self.MAX_SPIN_S)
                torch.cuda._sleep(int(seconds * cycles_per_s))
            for start, end in events:
                start.record()
                for _ in range(inner):
                    call()
                end.record()
            events[-1][1].synchronize()
            return [start.elapsed_time(end) / 1000.0 for start, end in events]

        return time_blocks
