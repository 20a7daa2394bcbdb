"""Clocks, power and temperature sampled while the benchmarks run.

GPU clocks move under sustained load (power capping, heat), so a figure is
only trustworthy together with what the chip did while it was measured. A
background sampler runs for the whole job; each case takes the samples of its
own timed window, and the runner flags cases that ran throttled or with an
unsteady clock.

NVIDIA: one long-running ``nvidia-smi --query-gpu=timestamp,clocks.sm,
clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active
--format=csv,noheader,nounits -lms 100`` (``clocks_event_reasons.active`` on
drivers that renamed the field). The timestamp column is there because
nvidia-smi block-buffers its output into a pipe: lines arrive late and in
bursts, so the time a line is read says nothing about when it was sampled.

AMD: ``amd-smi metric -g N -p -c -t --json`` polled in a loop (its watch mode
differs between versions), else ``rocm-smi -d N --showpower --showclocks
--showtemp --json``; the time of each sample is the end of the call.
Parsing walks the JSON for the keys each version uses, because their nesting
changed across ROCm releases.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import statistics
import subprocess
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from stack.tools import die_with_parent_preexec, rocm_bin_dir, run_tool, which

NVIDIA_FIELDS = (
    "timestamp",
    "clocks.sm",
    "clocks.mem",
    "power.draw",
    "temperature.gpu",
    "clocks_throttle_reasons.active",
)
NVIDIA_FIELDS_NEW = (*NVIDIA_FIELDS[:-1], "clocks_event_reasons.active")

# nvidia-smi's clocks_throttle_reasons bit mask (nvml.h, nvmlClocksThrottleReason*).
THROTTLE_BITS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
# The reasons that mean "the chip ran slower than it could": a benchmark flag.
THROTTLING = {"sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown",
              "hw_power_brake_slowdown", "throttled"}  # fmt: skip

CLOCK_SPREAD_FLAG = 0.05  # (max - min) / max of the SM clock inside one case


@dataclass
class Sample:
    """One reading of the GPU's state."""

    t: float  # seconds since the epoch
    sm_clock_mhz: float | None = None
    mem_clock_mhz: float | None = None
    power_w: float | None = None
    temperature_c: float | None = None
    reasons: list[str] = field(default_factory=list)

    def as_row(self) -> list[Any]:
        """CSV row for the telemetry artifact."""
        return [
            f"{self.t:.3f}",
            self.sm_clock_mhz,
            self.mem_clock_mhz,
            self.power_w,
            self.temperature_c,
            "|".join(self.reasons),
        ]


def decode_reasons(mask: int | None) -> list[str]:
    """Names of the set bits of nvidia-smi's throttle/event reason mask."""
    if not mask:
        return []
    names = [name for bit, name in THROTTLE_BITS.items() if mask & bit]
    unknown = mask & ~sum(THROTTLE_BITS)
    if unknown:
        names.append(f"0x{unknown:x}")
    return names


def _float(text: str | None) -> float | None:
    if text is None:
        return None
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        return None


def parse_nvidia_timestamp(text: str) -> float | None:
    """Epoch seconds from nvidia-smi's local "2026/11/30 11:13:28.118" (None if unreadable)."""
    match = re.match(r"^\s*(\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2})(?:\.(\d+))?\s*$", text)
    if not match:
        return None
    base = time.mktime(time.strptime(match.group(1), "%Y/%m/%d %H:%M:%S"))
    fraction = float(f"0.{match.group(2)}") if match.group(2) else 0.0
    return base + fraction


def parse_nvidia_line(line: str, fallback_t: float | None = None) -> Sample | None:
    """One line of the query (timestamp first), or None when it is not a data line."""
    parts = [p.strip() for p in line.split(",")]
    if len(parts) < len(NVIDIA_FIELDS):
        return None
    t = parse_nvidia_timestamp(parts[0])
    if t is None:
        if fallback_t is None:
            return None
        t = fallback_t
    mask_text = parts[5]
    mask: int | None
    try:
        mask = int(mask_text, 16) if mask_text.lower().startswith("0x") else int(mask_text)
    except ValueError:
        mask = None
    sample = Sample(
        t=t,
        sm_clock_mhz=_float(parts[1]),
        mem_clock_mhz=_float(parts[2]),
        power_w=_float(parts[3]),
        temperature_c=_float(parts[4]),
        reasons=decode_reasons(mask),
    )
    if all(v is None for v in (sample.sm_clock_mhz, sample.power_w, sample.temperature_c)):
        return None
    return sample


def _walk(node: Any, path: tuple[str, ...] = ()) -> Any:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _walk(value, (*path, str(key).lower()))
    elif isinstance(node, list):
        for item in node:
            yield from _walk(item, path)
    else:
        yield path, node


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        match = re.search(r"[-+]?\d+(?:\.\d+)?", value)
        return float(match.group(0)) if match else None
    return None


def _first(pairs: list[tuple[tuple[str, ...], Any]], *patterns: str) -> float | None:
    for pattern in patterns:
        regex = re.compile(pattern)
        for path, value in pairs:
            joined = "/".join(path)
            if regex.search(joined):
                number = _number(value)
                if number is not None:
                    return number
    return None


def parse_amd_json(text: str, t: float) -> Sample | None:
    """A sample from ``amd-smi metric --json`` or ``rocm-smi --json`` (first GPU in the text).

    amd-smi: ``power.socket_power`` (or ``average_socket_power``) as a number
    or ``{"value", "unit"}``, ``clock.gfx_0.clk``, ``temperature.hotspot`` /
    ``edge``, ``power.throttle_status``. rocm-smi: ``card0`` keys such as
    ``Average Graphics Package Power (W)``, ``sclk clock speed:`` "(2100Mhz)",
    ``Temperature (Sensor junction) (C)``.
    """
    from stack.parsers import ParseError, extract_json

    try:
        data = extract_json(text)
    except ParseError:
        return None
    if isinstance(data, dict) and "gpu_data" in data:
        data = data["gpu_data"]
    if isinstance(data, list):
        data = data[0] if data else {}
    if isinstance(data, dict) and len(data) == 1 and next(iter(data)).lower().startswith("card"):
        data = next(iter(data.values()))
    pairs = [(path, value) for path, value in _walk(data) if not path or path[-1] != "unit"]
    sample = Sample(
        t=t,
        sm_clock_mhz=_first(pairs, r"gfx_?0?/clk$", r"^clock/gfx", r"sclk", r"gfxclk"),
        mem_clock_mhz=_first(pairs, r"mem_?0?/clk$", r"^clock/mem", r"mclk", r"uclk"),
        power_w=_first(
            pairs,
            r"(^|/)socket_power(/value)?$",
            r"average_socket_power",
            r"package power",
            r"power",
        ),
        temperature_c=_first(pairs, r"hotspot", r"junction", r"edge", r"temperature"),
    )
    status = [v for path, v in pairs if path and "throttle_status" in path[-1]]
    if status and isinstance(status[0], str) and status[0].strip().upper() == "THROTTLED":
        sample.reasons.append("throttled")
    if all(v is None for v in (sample.sm_clock_mhz, sample.power_w, sample.temperature_c)):
        return None
    return sample


# --------------------------------------------------------------------------
# Samplers
# --------------------------------------------------------------------------


class Sampler:
    """Collects samples in the background between start() and stop()."""

    source = "none"

    def __init__(self, interval_ms: int = 100) -> None:
        self.interval_ms = interval_ms
        self.samples: list[Sample] = []
        self.error: str | None = None
        self.command: str | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        """Begin sampling (no-op for the null sampler)."""

    def stop(self) -> None:
        """End sampling; samples stay available."""

    def window(self, t0: float, t1: float) -> list[Sample]:
        """Samples taken between t0 and t1 (epoch seconds); the nearest one if none."""
        with self._lock:
            inside = [s for s in self.samples if t0 <= s.t <= t1]
            if inside or not self.samples:
                return inside
            middle = (t0 + t1) / 2
            nearest = min(self.samples, key=lambda s: abs(s.t - middle))
            slack = max(2 * self.interval_ms / 1000.0, 0.25)
            return [nearest] if abs(nearest.t - middle) <= (t1 - t0) / 2 + slack else []

    def _add(self, sample: Sample) -> None:
        with self._lock:
            self.samples.append(sample)

    def describe(self) -> dict[str, Any]:
        """What the summary says about the sampler."""
        return {
            "source": self.source,
            "interval_ms": self.interval_ms,
            "samples": len(self.samples),
            "command": self.command,
            "error": self.error,
        }

    def csv_text(self) -> str:
        """All samples as CSV (the telemetry artifact)."""
        lines = ["epoch_s,sm_clock_mhz,mem_clock_mhz,power_w,temperature_c,reasons"]
        with self._lock:
            for sample in self.samples:
                lines.append(",".join("" if v is None else str(v) for v in sample.as_row()))
        return "\n".join(lines) + "\n"


class NvidiaSmiSampler(Sampler):
    """nvidia-smi in loop mode, its lines read by a thread."""

    source = "nvidia-smi"

    def __init__(
        self, path: str, gpu_id: str, interval_ms: int = 100, fallback_id: str | None = None
    ) -> None:
        super().__init__(interval_ms)
        self.path = path
        self.gpu_ids = [gpu_id] + ([fallback_id] if fallback_id and fallback_id != gpu_id else [])
        self._proc: subprocess.Popen[str] | None = None
        self._thread: threading.Thread | None = None
        self._stderr: list[str] = []

    def _argv(self, gpu_id: str, fields: tuple[str, ...]) -> list[str]:
        return [
            self.path,
            f"--id={gpu_id}",
            f"--query-gpu={','.join(fields)}",
            "--format=csv,noheader,nounits",
            "-lms",
            str(self.interval_ms),
        ]

    def _choose(self) -> tuple[str, tuple[str, ...]] | None:
        """The GPU id and field list this driver answers (one plain query each to find out).

        Drivers from R535 on call the reasons field clocks_event_reasons and may
        drop the old name; a UUID may be refused where an index works.
        """
        last = ""
        for gpu_id in self.gpu_ids:
            for fields in (NVIDIA_FIELDS, NVIDIA_FIELDS_NEW):
                argv = self._argv(gpu_id, fields)[:-2]
                try:
                    run = run_tool(argv, 20, extra_dirs=())
                except Exception as exc:  # reported as the sampler's error
                    last = str(exc)
                    continue
                line = next((x for x in run.stdout.splitlines() if x.strip()), "")
                if run.ok and parse_nvidia_line(line) is not None:
                    return gpu_id, fields
                last = run.first_line()
        self.error = f"nvidia-smi query refused: {last[:300]}"
        return None

    def start(self) -> None:
        """Start the loop (with the GPU id and field names the driver accepts)."""
        chosen = self._choose()
        if chosen is None:
            return
        argv = self._argv(*chosen)
        self.command = " ".join(argv)
        try:
            self._proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                bufsize=1,
                preexec_fn=die_with_parent_preexec(),
            )
        except OSError as exc:
            self.error = f"could not start nvidia-smi: {exc}"
            return
        self._thread = threading.Thread(target=self._read, name="nvidia-smi-sampler", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            sample = parse_nvidia_line(line, fallback_t=time.time())
            if sample is not None:
                self._add(sample)
            elif line.strip():
                self._stderr.append(line.strip())

    def stop(self) -> None:
        """Terminate nvidia-smi and collect what it printed."""
        proc = self._proc
        if proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()
        try:
            _out, err = proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            _out, err = proc.communicate()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if not self.samples:
            detail = (err or "").strip() or "; ".join(self._stderr[:3])
            self.error = (
                f"nvidia-smi gave no samples: {detail[:300]}"
                if detail
                else ("nvidia-smi gave no samples")
            )
        self._proc = None


class PollingSampler(Sampler):
    """Calls a one-shot command in a loop (amd-smi or rocm-smi) from a thread."""

    def __init__(self, source: str, argv: list[str], interval_ms: int = 200) -> None:
        super().__init__(max(interval_ms, 200))
        self.source = source
        self.argv = argv
        self.command = " ".join(argv)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Begin polling."""
        self._thread = threading.Thread(
            target=self._loop, name=f"{self.source}-sampler", daemon=True
        )
        self._thread.start()

    def _loop(self) -> None:
        failures = 0
        while not self._stop.is_set():
            began = time.time()
            try:
                run = run_tool(self.argv, 10, extra_dirs=())
                sample = parse_amd_json(run.stdout, time.time()) if run.ok else None
            except Exception as exc:  # recorded, sampling goes on
                run, sample = None, None
                self.error = f"{self.source}: {exc}"
            if sample is not None:
                self._add(sample)
                failures = 0
            else:
                failures += 1
                if run is not None and not run.ok:
                    self.error = f"{self.source} exit status {run.returncode}: {run.first_line()}"
                if failures >= 5:
                    return
            left = self.interval_ms / 1000.0 - (time.time() - began)
            if left > 0:
                self._stop.wait(left)

    def stop(self) -> None:
        """Stop polling."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=15)
        if not self.samples and self.error is None:
            self.error = f"{self.source} gave no samples"


def null_sampler(reason: str, interval_ms: int) -> Sampler:
    """A sampler that records nothing, saying why."""
    sampler = Sampler(interval_ms)
    sampler.error = reason
    return sampler


# The variables that pick which of the host's GPUs a process sees, per vendor: a job
# leased GPU 2 sees it as device 0, but the SMI tools number the host's GPUs.
_VISIBLE = {"nvidia": ("CUDA_VISIBLE_DEVICES",), "amd": ("ROCR_VISIBLE_DEVICES",)}


def host_gpu_index(vendor: str | None, index: int, env: Mapping[str, str] = os.environ) -> int:
    """The host's number (what nvidia-smi / amd-smi / rocm-smi call it) of visible GPU ``index``.

    The *_VISIBLE_DEVICES lists map visible to host numbers when they hold numbers
    (UUIDs in them are left alone: the index is returned as it is).
    """
    for name in _VISIBLE.get(vendor or "", ()):
        listed = [item.strip() for item in env.get(name, "").split(",") if item.strip()]
        if index < len(listed) and listed[index].isdigit():
            return int(listed[index])
    return index


def make_sampler(vendor: str | None, gpu_index: int, uuid: str | None, interval_ms: int) -> Sampler:
    """The best sampler for the device (a null one on the CPU or when no tool is there).

    ``gpu_index`` is the device's number as the benchmark sees it; the tools are
    given its UUID where one is known, else its host number (:func:`host_gpu_index`).
    """
    gpu_index = host_gpu_index(vendor, gpu_index)
    if vendor == "nvidia":
        path = which("nvidia-smi", ())
        if path:
            return NvidiaSmiSampler(path, uuid or str(gpu_index), interval_ms, str(gpu_index))
        return null_sampler(
            "nvidia-smi not found: no clocks, power or temperature recorded", interval_ms
        )
    if vendor == "amd":
        rocm_bin = rocm_bin_dir()
        path = which("amd-smi", (rocm_bin,))
        if path:
            argv = [path, "metric", "-g", str(gpu_index), "-p", "-c", "-t", "--json"]
            return PollingSampler("amd-smi", argv, interval_ms)
        path = which("rocm-smi", (rocm_bin,))
        if path:
            argv = [
                path,
                "-d",
                str(gpu_index),
                "--showpower",
                "--showclocks",
                "--showtemp",
                "--json",
            ]
            return PollingSampler("rocm-smi", argv, interval_ms)
        return null_sampler(
            "neither amd-smi nor rocm-smi found: no clocks, power or temperature", interval_ms
        )
    return null_sampler("CPU run: no GPU telemetry", interval_ms)


def _stats(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
    }


def _readings(samples: list[Sample], name: str) -> list[float]:
    """The finite values of one field: a missing or non-finite reading is no reading."""
    values = (getattr(s, name) for s in samples)
    return [v for v in values if v is not None and math.isfinite(v)]


def summarize_window(samples: list[Sample]) -> dict[str, Any]:
    """What happened during one case: clocks, power, temperature, throttling flags."""
    clocks = _readings(samples, "sm_clock_mhz")
    power = _readings(samples, "power_w")
    temps = _readings(samples, "temperature_c")
    mem = _readings(samples, "mem_clock_mhz")
    throttling = sorted({r for s in samples for r in s.reasons} & THROTTLING)
    spread = (max(clocks) - min(clocks)) / max(clocks) if clocks and max(clocks) > 0 else 0.0
    return {
        "samples": len(samples),
        "sm_clock_mhz": _stats(clocks),
        "mem_clock_mhz": _stats(mem),
        "power_w": _stats(power),
        "temperature_c": _stats(temps),
        "throttled": bool(throttling),
        "throttle_reasons": throttling,
        "clock_spread": spread,
        "clock_unstable": spread > CLOCK_SPREAD_FLAG,
        "sm_clock_samples": clocks,
        "power_samples": power,
        "temperature_samples": temps,
    }
