"""Helpers shared by the stack tests (imported by name; conftest.py holds the fixtures).

A module of its own, with a name no other test folder uses, because test
folders here are not packages: two modules called ``conftest`` cannot both be
imported by name.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

from stack.events import Emitter

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def fixture_text(name: str) -> str:
    """The text of a saved tool output under tests/stack/fixtures."""
    return (FIXTURES / name).read_text(encoding="utf-8")


def make_tool(bin_dir: Path, name: str, body: str) -> Path:
    """Write an executable Python script called name into bin_dir.

    Python rather than sh so that the fake needs nothing on PATH (the tests
    run with a PATH that holds only bin_dir).
    """
    path = bin_dir / name
    path.write_text(f"#!{sys.executable}\nimport sys, time\n{body}\n", encoding="utf-8")
    path.chmod(0o755)
    return path


def tool_printing(bin_dir: Path, name: str, outputs: dict[str, str], default: str = "") -> Path:
    """A fake tool that prints a fixture chosen by a word in its arguments.

    ``outputs`` maps an argument (e.g. "static") to a fixture file name; with
    no match it prints ``default`` (a fixture name, or nothing).
    """
    table = {arg: fixture_text(fname) for arg, fname in outputs.items()}
    fallback = fixture_text(default) if default else ""
    body = (
        f"table = {table!r}\n"
        "args = sys.argv[1:]\n"
        f"text = next((table[a] for a in args if a in table), {fallback!r})\n"
        "sys.stdout.write(text)\n"
    )
    return make_tool(bin_dir, name, body)


class Captured:
    """An Emitter writing into memory, with the events parsed back."""

    def __init__(self) -> None:
        self.buffer = io.StringIO()
        self.emitter = Emitter(self.buffer)

    @property
    def events(self) -> list[dict[str, object]]:
        return [json.loads(line) for line in self.buffer.getvalue().splitlines()]


def run_stack(
    args: list[str],
    env: dict[str, str] | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m stack ARGS`` from the repository root and capture both streams."""
    if env is None:
        env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    return subprocess.run(
        [sys.executable, "-m", "stack", *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def event_lines(stdout: str) -> list[dict[str, object]]:
    """Every stdout line parsed as JSON (fails the test if one is not)."""
    return [json.loads(line) for line in stdout.splitlines()]
