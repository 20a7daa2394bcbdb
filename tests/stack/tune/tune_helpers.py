"""Fixtures of the tune tests, written from the tools' documented formats (REFERENCE.md,
the tools' sources): rocBLAS ROCBLAS_LAYER=2 bench lines, hipBLASLt HIPBLASLT_LOG_MASK=32
lines, TunableOp untuned and tuned files. The shapes are a BERT / Llama layer's; the
MI300X validator values are illustrative (no AMD GPU here), in the files' real layout."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def tune_fixture(name: str) -> str:
    """The text of a fixture under tests/stack/tune/fixtures."""
    return (FIXTURES / name).read_text(encoding="utf-8")
