"""The tiers hold: a test that starts a process, forks or listens without a marker saying
so fails, and one that asks for a process-starting fixture unmarked is not collected."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

UNMARKED = """
import os, socket, subprocess, multiprocessing
import pytest

def test_runs_a_tool():
    subprocess.run(["true"], check=True)

def test_runs_a_tool_but_catches_oserror():
    try:
        subprocess.run(["true"], check=True)
    except Exception:
        pass

def test_forks():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)

def test_spawns_a_python():
    ctx = multiprocessing.get_context("spawn")
    p = ctx.Process(target=print)
    p.start()
    p.join()

def test_serves():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()

@pytest.fixture(scope="module")
def tool_output():
    return subprocess.run(["echo", "hi"], capture_output=True, check=True).stdout

def test_uses_a_module_fixture_that_runs_a_tool(tool_output):
    assert tool_output

def test_stays_in_process():
    assert sum(range(4)) == 6

@pytest.mark.process
def test_marked_runs_a_tool():
    subprocess.run(["true"], check=True)
"""


def run_inline(pytester: pytest.Pytester, source: str, *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_tiered=source)
    return pytester.runpytest(
        "-p", "tests.tiers", "-p", "no:django", "-p", "no:cacheprovider", *args
    )


@pytest.mark.process  # the marked example below really starts a process
def test_an_unmarked_test_that_starts_a_process_forks_or_listens_fails_naming_the_markers(
    pytester: pytest.Pytester,
) -> None:
    result = run_inline(pytester, UNMARKED)
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed") == 2, result.stdout.str()  # in-process and marked
    assert outcomes.get("failed", 0) + outcomes.get("errors", 0) == 6, result.stdout.str()
    text = result.stdout.str()
    for what in ("starts a subprocess", "forks", "listens on a socket (a server)"):
        assert f"this test {what} but carries none of the markers" in text


def test_an_unmarked_test_asking_for_a_process_fixture_is_refused_at_collection(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest("import pytest\n@pytest.fixture\ndef worker():\n    return 'started'\n")
    result = run_inline(pytester, "def test_uses_a_worker(worker):\n    assert worker\n")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*uses the fixture 'worker'*mark it @pytest.mark.integration*"])
