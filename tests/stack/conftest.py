"""Fixtures for the stack tests (plain helpers live in stack_helpers.py)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from stack_helpers import REPO_ROOT, Captured

from stack.runtime import RunContext


@pytest.fixture
def bare_env(tmp_path: Path) -> dict[str, str]:
    """An environment in which no GPU tool can be found.

    PATH holds only an empty folder (fake tools go there), and ROCM_PATH and
    CUDA_HOME point at folders that do not exist, so that the probe neither
    sees this machine's tools nor a real /opt/rocm on a GPU host.
    """
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")
    }
    env.update(
        PATH=str(bin_dir),
        ROCM_PATH=str(tmp_path / "no-rocm"),
        CUDA_HOME=str(tmp_path / "no-cuda"),
        PYTHONPATH=str(REPO_ROOT),
    )
    return env


@pytest.fixture
def use_env(monkeypatch: pytest.MonkeyPatch) -> Callable[[dict[str, str]], None]:
    """Apply an environment dict to this process (for in-process probe runs)."""

    def apply(env: dict[str, str]) -> None:
        for key in ("PATH", "ROCM_PATH", "CUDA_HOME", "PYTHONPATH"):
            monkeypatch.setenv(key, env[key])
        monkeypatch.delenv("CUDA_PATH", raising=False)

    return apply


@pytest.fixture
def captured() -> Captured:
    return Captured()


@pytest.fixture
def ctx(tmp_path: Path, captured: Captured) -> RunContext:
    """A RunContext on a fresh OUT, events captured in memory."""
    out = tmp_path / "out"
    out.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    return RunContext(out=out, emit=captured.emitter, work=work)
