"""What every family's case runner shares: the bench context and the measuring steps.

A ``Bench`` holds what one backend needs for the whole job (params, the
timing settings, the device, the modules, the telemetry sampler), so that
each family's code reads as "make inputs, time the call, check it"; the
refusals and the failure handling live here so that every family reports a
case it cannot run the same way.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from stack.blas import check, samples, telemetry
from stack.blas.devices import Device, TorchTimer, free_memory_bytes
from stack.blas.results import ERROR, FAILED_CHECK, SKIPPED, CaseResult
from stack.blas.stats import BlockTimer, LoopSettings, Timing, adaptive_loop


def rotate(calls: list[Callable[[], Any]]) -> Callable[[], Any]:
    """One call that runs ``calls`` in turn (one per input set); the call itself if only one."""
    if len(calls) == 1:
        return calls[0]
    state = {"i": 0}

    def call() -> Any:
        i = state["i"]
        state["i"] = (i + 1) % len(calls)
        return calls[i]()

    return call


def is_oom(exc: BaseException) -> bool:
    """Whether an exception means "out of memory" (host or device, torch or numpy)."""
    if isinstance(exc, MemoryError):
        return True
    text = f"{type(exc).__name__} {exc}".lower()
    return "out of memory" in text or "outofmemory" in text


@dataclass
class Bench:
    """Everything a backend's case runners need."""

    backend: str  # "torch", "numpy", "rocblas-bench", "hipblaslt-bench"
    params: dict[str, Any]
    settings: LoopSettings
    device: Device
    sampler: telemetry.Sampler
    torch: Any = None
    np: Any = None
    corrupt: bool = False
    check: bool = True
    seed: int = 0
    tool_path: str | None = None  # the external tool's executable, found once at setup
    # best rate seen per (family, precision), in work units per second, to predict big cases
    rates: dict[tuple[str, str], float] = field(default_factory=dict)
    # problems already run (after layout rewrites), so that one is not timed twice
    done: set[tuple[object, ...]] = field(default_factory=set)
    _timer: TorchTimer | None = None

    @property
    def timer(self) -> TorchTimer:
        """The torch block timer for this device."""
        if self._timer is None:
            self._timer = TorchTimer(self.torch, self.device)
        return self._timer

    def timing_method(self) -> str:
        """How this backend's samples are taken (for the summary)."""
        if self.backend == "numpy":
            return "time.perf_counter around blocks of synchronous numpy calls"
        if self.backend == "torch":
            return self.timer.method
        from stack.blas.blas_tools import timing_method

        return timing_method(self.backend)

    def free_bytes(self) -> int | None:
        """Memory free on the device now."""
        return free_memory_bytes(self.torch, self.device)

    def synchronize(self) -> None:
        """Wait for queued device work (torch on a GPU); no-op elsewhere."""
        if self.torch is not None and self.device.kind == "cuda":
            self.torch.cuda.synchronize(self.device.index)

    def release(self) -> None:
        """Give cached device memory back between cases (fewer OOMs from fragmentation)."""
        if self.torch is not None and self.device.kind == "cuda":
            self.torch.cuda.synchronize(self.device.index)
            self.torch.cuda.empty_cache()

    def predicted_seconds(self, family: str, precision: str, work: float) -> float | None:
        """Seconds one call should take, from the best rate seen at a smaller size."""
        rate = self.rates.get((family, precision))
        return work / rate if rate else None

    def too_slow(self, family: str, precision: str, work: float) -> str | None:
        """A skip reason when one call would exceed the case budget."""
        predicted = self.predicted_seconds(family, precision, work)
        if predicted is not None and predicted > max(self.settings.budget_s, 1.0):
            return (
                f"one call would take about {predicted:.1f} s (from the rate measured at a "
                f"smaller size), more than case_budget_s={self.settings.budget_s:g}"
            )
        return None

    def memory_refusal(self, needed: int) -> str | None:
        """A skip reason when the inputs would not fit in free memory."""
        free = self.free_bytes()
        if free is not None and needed > 0.85 * free:
            return (
                f"needs about {needed / 2**30:.2f} GiB, {free / 2**30:.2f} GiB free "
                f"on {self.device.label}"
            )
        return None

    def refused(
        self, result: CaseResult, rate_key: str | None, needed_bytes: int | None = None
    ) -> bool:
        """Skip a case up front rather than let it blow the case budget or exhaust memory.

        ``rate_key`` names the rates that predict its time (None: no prediction);
        ``needed_bytes`` is what must fit in free memory (None: not checked).
        """
        reason = None
        if rate_key is not None:
            reason = self.too_slow(result.family, rate_key, result.work)
        if reason is None and needed_bytes is not None:
            reason = self.memory_refusal(needed_bytes)
        if reason is not None:
            result.status, result.reason = SKIPPED, reason
        return reason is not None

    def fail(self, result: CaseResult, exc: BaseException) -> CaseResult:
        """A case that raised: skipped when it ran out of memory, else an error; the job goes on.

        Out of memory says the case is too big for this device, not that the
        library is broken, so it is a skip like a refused case.
        """
        self.release()
        text = f"{type(exc).__name__}: {str(exc)[:400]}"
        if is_oom(exc):
            result.status, result.reason = SKIPPED, f"out of memory: {text}"
        else:
            result.status, result.reason = ERROR, text
        result.timing = None
        return result

    def operand_sets(self, set_bytes: int) -> int:
        """How many input sets to rotate through so that a cold-cache run misses the cache."""
        if not self.params.get("cold_cache"):
            return 1
        cache = self.device.l2_bytes or 64 * 2**20
        wanted = math.ceil(2 * cache / max(set_bytes, 1)) + 1
        free = self.free_bytes() or 0
        affordable = max(1, int(0.25 * free // max(set_bytes, 1))) if free else 8
        return max(1, min(wanted, affordable, 256))

    def measure(self, time_blocks: BlockTimer) -> Timing:
        """Run the adaptive loop on a block timer."""
        return adaptive_loop(time_blocks, self.settings)

    def measure_torch(self, calls: list[Callable[[], Any]]) -> Timing:
        """Time torch calls, rotating through them (one per input set)."""
        return self.measure(self.timer.block(rotate(calls)))

    def damage(self, result: CaseResult, out: Any, what: str = "output") -> None:
        """corrupt_output: damage one element of ``out`` in place and note where on the result."""
        if self.backend == "torch":
            where = check.corrupt_torch(self.torch, out, self.seed)
        else:
            where = check.corrupt_numpy(self.np, out, self.seed)
        result.notes.append(f"corrupt_output: damaged the {what} at {where}")

    def attach_telemetry(self, result: CaseResult) -> None:
        """The samples of the case's timed window, summarised, onto the result."""
        if result.timing is None or self.sampler.source == "none":
            return
        window = self.sampler.window(result.timing.wall_start, result.timing.wall_end)
        result.telemetry = samples.summarize_window(window)

    def remember_rate(self, family: str, precision: str, result: CaseResult) -> None:
        """Keep the fastest rate seen for predictions."""
        if result.timing is None or not result.work:
            return
        seconds = result.timing.summary.median
        if seconds > 0:
            key = (family, precision)
            rate = result.work / seconds
            self.rates[key] = max(rate, self.rates.get(key, 0.0))

    def finish(self, result: CaseResult, key: str) -> CaseResult:
        """After a measured case: its telemetry, a failed check as its status, its rate kept."""
        self.attach_telemetry(result)
        if result.check is not None and not result.check.passed:
            result.status, result.reason = FAILED_CHECK, result.check.detail
        self.remember_rate(result.family, key, result)
        return result


def peak_for(device: Device, precision: str) -> tuple[float | None, str | None]:
    """Vendor peak (TFLOP/s or TOPS) for a precision on the device, with a label."""
    value = device.peaks.peak(precision)
    if value is None or device.peaks.gpu is None:
        return None, None
    unit = "TOPS" if precision == "int8" else "TFLOP/s"
    return value, f"{device.peaks.gpu} {precision.upper()} dense {value:g} {unit}"


def hbm_peak(device: Device) -> tuple[float | None, str | None]:
    """Vendor HBM bandwidth in GB/s, with a label."""
    tbps = device.peaks.hbm_tbps
    if tbps is None or device.peaks.gpu is None:
        return None, None
    return tbps * 1000.0, f"{device.peaks.gpu} HBM {tbps:g} TB/s"
