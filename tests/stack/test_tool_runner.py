"""Finding and running external tools: hints when missing, timeouts, no orphans."""

import os
import signal
import subprocess
import sys
import time

import pytest
from stack_helpers import REPO_ROOT, make_tool

from stack.tools import ToolMissing, ToolTimeout, run_tool, which
from tests.waits import PROMPT_S, START_S


def test_which_finds_a_tool_in_the_rocm_bin_folder_when_it_is_not_on_path(tmp_path, monkeypatch):
    rocm_bin = tmp_path / "rocm" / "bin"
    rocm_bin.mkdir(parents=True)
    tool = make_tool(rocm_bin, "rocminfo", "print('hi')")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "rocm"))
    assert which("rocminfo") == str(tool)
    assert which("rocminfo", extra_dirs=()) is None


def test_which_skips_files_that_are_not_executable(tmp_path, monkeypatch):
    (tmp_path / "rocminfo").write_text("not executable")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert which("rocminfo", extra_dirs=()) is None


def test_a_missing_tool_raises_tool_missing_naming_it_and_where_to_get_it(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "none"))
    with pytest.raises(ToolMissing) as caught:
        run_tool(["rocminfo"], timeout=5)
    assert caught.value.tool == "rocminfo"
    assert "rocminfo not found" in str(caught.value)
    assert "Debian package 'rocminfo'" in str(caught.value)
    assert "/opt/rocm/bin/rocminfo" in str(caught.value)


def test_tool_missing_takes_a_custom_hint():
    assert "build it yourself" in str(ToolMissing("mytool", "build it yourself"))


@pytest.mark.process
def test_run_tool_captures_both_streams_exit_status_and_duration(tmp_path):
    tool = make_tool(
        tmp_path, "talker", "print('out', sys.argv[1:]); print('err', file=sys.stderr); sys.exit(4)"
    )
    run = run_tool([str(tool), "a", "b"], timeout=START_S)
    assert run.returncode == 4
    assert run.stdout == "out ['a', 'b']\n"
    assert run.stderr == "err\n"
    assert run.duration_s > 0
    assert not run.ok
    assert run.first_line() == "err"
    assert "# exit status 4" in run.transcript()


@pytest.mark.process
def test_run_tool_kills_a_tool_that_runs_past_its_timeout(tmp_path):
    tool = make_tool(tmp_path, "sleeper", "print('started', flush=True); time.sleep(600)")
    started = time.monotonic()
    with pytest.raises(ToolTimeout) as caught:
        run_tool([str(tool)], timeout=0.5)
    assert time.monotonic() - started < PROMPT_S  # killed, not waited out
    assert str(caught.value) == "sleeper timed out after 0.5 s"
    assert caught.value.stdout == "started\n"


def _is_gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux only")
@pytest.mark.process
def test_a_tool_dies_with_the_runner_that_started_it(tmp_path):
    pid_file = tmp_path / "tool.pid"
    tool = make_tool(
        tmp_path,
        "stubborn",
        "import os, signal\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
        "time.sleep(60)",
    )
    runner = subprocess.Popen(
        [sys.executable, "-c", f"from stack.tools import run_tool; run_tool([{str(tool)!r}], 60)"],
        cwd=REPO_ROOT,
        env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)),
        start_new_session=True,
    )
    tool_pid = None
    try:
        deadline = time.monotonic() + 10
        while not pid_file.exists() or not pid_file.read_text():
            assert time.monotonic() < deadline, "the tool never started"
            time.sleep(0.02)
        tool_pid = int(pid_file.read_text())
        runner.kill()  # SIGKILL to the runner alone: no handler, no group signal
        runner.wait()
        deadline = time.monotonic() + 5
        while not _is_gone(tool_pid):
            assert time.monotonic() < deadline, "the tool outlived its runner"
            time.sleep(0.02)
    finally:
        if runner.poll() is None:
            os.killpg(runner.pid, signal.SIGKILL)
        if tool_pid is not None and not _is_gone(tool_pid):
            os.kill(tool_pid, signal.SIGKILL)
