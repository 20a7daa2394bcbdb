"""What the benchmarks' telemetry records: samples, their parsing, a case's summary.

GPU clocks move under sustained load (power capping, heat), so a figure is
only trustworthy together with what the chip did while it was measured. A
Sample is one reading; summarize_window() says what happened during one
case's timed window, and the runner flags cases that ran throttled or with an
unsteady clock. The samplers that collect them are in telemetry.py.

NVIDIA lines come from ``nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,
power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader,
nounits -lms 100``; AMD readings from ``amd-smi metric --json`` / ``rocm-smi
--json``, parsed by stack.parsers.amdsmi.parse_metric.
"""

from __future__ import annotations

import math
import re
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from stack.parsers import amdsmi

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


def parse_amd_json(text: str, t: float) -> Sample | None:
    """A sample taken at ``t`` from ``amd-smi metric --json`` or ``rocm-smi --json``."""
    readings = amdsmi.parse_metric(text)
    if readings is None:
        return None
    throttled = readings.pop("throttled")
    return Sample(t=t, **readings, reasons=["throttled"] if throttled else [])


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
