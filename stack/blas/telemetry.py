"""Clocks, power and temperature sampled while the benchmarks run (the samplers).

A background sampler runs for the whole job; each case takes the samples of
its own timed window (samples.py says what a sample is and sums a window up).

NVIDIA: one long-running ``nvidia-smi --query-gpu=... -lms 100``
(``clocks_event_reasons.active`` on drivers that renamed the field). The
timestamp column is there because nvidia-smi block-buffers its output into a
pipe: lines arrive late and in bursts, so the time a line is read says nothing
about when it was sampled.

AMD: ``amd-smi metric -g N -p -c -t --json`` polled in a loop (its watch mode
differs between versions), else ``rocm-smi -d N --showpower --showclocks
--showtemp --json``; the time of each sample is the end of the call.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time
from collections.abc import Mapping
from typing import Any

from stack.blas.samples import (
    NVIDIA_FIELDS,
    NVIDIA_FIELDS_NEW,
    Sample,
    parse_amd_json,
    parse_nvidia_line,
)
from stack.tools import die_with_parent_preexec, rocm_bin_dir, run_tool, which

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
