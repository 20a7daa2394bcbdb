"""Helpers of the profile tests: their fixtures, written from the tools' documented formats."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def profile_fixture(name: str) -> str:
    """The text of a fixture under tests/stack/profile/fixtures."""
    return (FIXTURES / name).read_text(encoding="utf-8")
