"""A job that fills its disk is told so: the cause and the path first, the file that filled it.

Each test fills a tmpfs of its own (16 MiB, mounted here and unmounted after), never the
machine's disk: the sandbox's /tmp and a job's out folder are both such a size-limited
folder in production (jobs/executors/sandbox.py).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from stack_helpers import REPO_ROOT

from stack.cli import execute
from stack.kinds import get_kind, validate_params
from stack.kinds.base import Kind
from stack.runtime import RunResult
from stack.tools import ToolRun

SIZE = "16m"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 16 MiB tmpfs: the full disk the job meets."""
    folder = tmp_path / "disk"
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={SIZE}", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def _fill(path: Path) -> None:
    """Write ``path`` until the disk is full (the ENOSPC propagates)."""
    with path.open("wb") as handle:
        while True:
            handle.write(b"\0" * (1 << 20))
            handle.flush()


# A child (as the profile and tune-gemm runners start theirs: stack.child.drive) whose
# workload fills /tmp, which is also where its report goes.
CHILD = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from stack.child import drive

    def run(spec):
        with open(spec["fill"], "wb") as handle:
            while True:
                handle.write(b"\\0" * (1 << 20))
                handle.flush()

    sys.exit(drive(sys.argv[1:], run, "test-child"))
    """
)


@pytest.mark.process  # mounts a tmpfs, starts a child interpreter
def test_a_child_that_fills_the_sandbox_tmp_fails_with_the_cause_and_path_not_a_traceback(
    small_disk: Path, tmp_path: Path
) -> None:
    from stack.profile.runner import workload_failure

    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"out_dir": str(small_disk), "fill": str(small_disk / "x")}))
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(spec)],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"},
        timeout=60,
        check=False,
    )
    run = ToolRun(done.returncode, done.stdout, done.stderr, 0.1)

    reason = workload_failure({}, run)
    assert reason.startswith(f"No space left on device: {small_disk} is full"), (
        reason,
        done.stderr,
    )
    assert f"its largest file is {small_disk / 'x'} (" in reason, reason
    assert "^^" not in reason and "Traceback" not in reason


@pytest.mark.process  # mounts a tmpfs
def test_a_job_that_fills_its_out_folder_names_the_big_file_not_result_json(
    small_disk: Path, captured, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    def runner(params, ctx):
        # a runner that ignores its failed write: the result still has to go out
        with contextlib.suppress(OSError):
            _fill(ctx.out / "big.bin")
        return RunResult(status="succeeded")

    monkeypatch.setattr(Kind, "load_runner", lambda self: runner)
    code = execute(
        get_kind("noop"), validate_params("noop", {}), small_disk, small_disk, captured.emitter
    )

    said = capsys.readouterr().err.strip()
    assert code == 3
    assert said.startswith("stack: No space left on device: the out folder"), said
    assert "its largest file is out/big.bin" in said, said


def test_a_runner_raising_an_os_error_is_errored_with_its_cause_then_its_path(
    tmp_path: Path, captured, monkeypatch: pytest.MonkeyPatch
) -> None:
    def runner(params, ctx):
        raise OSError(28, "No space left on device", "/tmp/x")

    monkeypatch.setattr(Kind, "load_runner", lambda self: runner)
    out = tmp_path / "out"
    out.mkdir()
    execute(get_kind("noop"), validate_params("noop", {}), out, tmp_path, captured.emitter)
    document = json.loads((out / "result.json").read_text())
    assert document["error"] == "No space left on device: /tmp/x"


def test_a_tools_own_error_text_is_kept_when_its_stderr_holds_no_traceback() -> None:
    from stack.profile.runner import workload_failure

    run = ToolRun(1, "", "hipcc: error: no input files\n", 0.1)
    assert workload_failure({}, run) == "hipcc: error: no input files"
