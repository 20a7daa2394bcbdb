"""What one benchmark case produced, whatever the family and backend.

Every family (GEMM, bandwidth, FFT, solvers) and every backend (torch, numpy,
rocblas-bench, hipblaslt-bench) returns CaseResult records; the runner turns
them into Measurements, summary rows and flags the same way for all, so the
job page can show one table and compare like with like.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stack.blas.stats import Timing

OK = "ok"
FAILED_CHECK = "failed_check"
UNSUPPORTED = "unsupported"
SKIPPED = "skipped"
ERROR = "error"


@dataclass
class CheckResult:
    """The correctness check of one case's output against a reference."""

    passed: bool
    error: float  # the largest normalised error found (family-specific scale)
    tolerance: float
    mode: str  # "full", "rows:64", "tool:-v", ...
    nonfinite: int = 0
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "passed": self.passed,
            "error": self.error,
            "tolerance": self.tolerance,
            "mode": self.mode,
            "nonfinite": self.nonfinite,
            "detail": self.detail,
        }


@dataclass
class CaseResult:
    """One case of one family on one backend: measured, refused, skipped or broken."""

    family: str  # "gemm", "bandwidth", "fft", "solver"
    backend: str
    case: dict[str, str | int | float | bool]
    status: str = OK
    reason: str | None = None
    timing: Timing | None = None
    work: float = 0.0  # operations (or bytes, for bandwidth) per call
    rate_unit: str = "TFLOP/s"  # TFLOP/s, TOPS or GB/s
    rate_scale: float = 1e12  # work / seconds / rate_scale = rate in rate_unit
    peak: float | None = None  # vendor peak in rate_unit, when known
    peak_label: str | None = None  # e.g. "H200 BF16 dense 989.4 TFLOP/s"
    check: CheckResult | None = None
    footprint_bytes: int | None = None
    peak_memory_bytes: int | None = None
    telemetry: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def measured(self) -> bool:
        """Whether there are timing samples (ok or a failed check)."""
        return self.timing is not None and bool(self.timing.samples_s)

    def rates(self) -> list[float]:
        """Per-sample rates in rate_unit."""
        if not self.measured or not self.work:
            return []
        assert self.timing is not None
        return [self.work / s / self.rate_scale for s in self.timing.samples_s if s > 0]

    def median_rate(self) -> float | None:
        """The rate of the median time (what the tables show)."""
        if not self.measured or not self.work:
            return None
        assert self.timing is not None
        median = self.timing.summary.median
        return self.work / median / self.rate_scale if median > 0 else None
