"""Helpers for the blas-bench tests (a module name no other test folder uses)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parent / "fixtures"

# Timing settings small enough that a whole CPU job takes a second or two.
FAST = {
    "warmup_s": 0.002,
    "warmup_min_calls": 1,
    "min_reps": 3,
    "max_reps": 12,
    "min_sampling_s": 0.005,
    "case_budget_s": 0.05,
    "min_sample_s": 0.0002,
    "environment": False,
    "telemetry": False,
}


def fixture(name: str) -> str:
    """The text of a saved tool output under tests/stack/blas/fixtures."""
    return (FIXTURES / name).read_text(encoding="utf-8")


def fast_params(**params: Any) -> dict[str, Any]:
    """Validated blas-bench params with the fast timing settings and the given overrides."""
    from stack.kinds import validate_params

    return validate_params("blas-bench", {**FAST, **params})
