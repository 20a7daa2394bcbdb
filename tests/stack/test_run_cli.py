"""``python -m stack`` end to end, in a subprocess, as the worker runs it."""

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest
from stack_helpers import REPO_ROOT, event_lines, run_stack

from stack.contract import parse_event, validate_result
from stack.kinds import KINDS
from tests.waits import START_S, STOP_S

pytestmark = pytest.mark.process


def write_params(tmp_path, params):
    path = tmp_path / "params.json"
    path.write_text(json.dumps(params))
    return path


def read_result(out):
    document = json.loads((out / "result.json").read_text())
    validate_result(document)
    return document


def test_probe_run_exits_0_with_a_valid_result_and_progress_to_100(tmp_path, bare_env):
    params = write_params(tmp_path, {"tool_timeout_s": 5})
    out = tmp_path / "out"
    proc = run_stack(["run", "probe", "--params", str(params), "--out", str(out)], env=bare_env)
    assert proc.returncode == 0, proc.stderr
    events = [parse_event(line) for line in proc.stdout.splitlines()]
    progress = [e["pct"] for e in events if e["event"] == "progress"]
    assert progress == sorted(progress)
    assert progress[-1] == 100
    document = read_result(out)
    assert document["kind"] == "probe"
    assert document["status"] == "succeeded"
    gpu_tools = ("amd-smi", "rocm-smi", "rocminfo", "nvidia-smi")
    assert all(not document["environment"]["tools"][t]["present"] for t in gpu_tools)


@pytest.mark.parametrize(("status", "code"), [("succeeded", 0), ("failed", 1), ("errored", 3)])
def test_noop_exit_code_and_result_follow_the_status_asked(tmp_path, status, code):
    params = write_params(tmp_path, {"exit_status": status})
    out = tmp_path / "out"
    proc = run_stack(["run", "noop", "--params", str(params), "--out", str(out)])
    assert proc.returncode == code, proc.stderr
    assert read_result(out)["status"] == status


def test_params_may_be_left_out_and_the_defaults_apply(tmp_path):
    out = tmp_path / "out"
    proc = run_stack(["run", "noop", f"--out={out}"])
    assert proc.returncode == 0, proc.stderr
    assert read_result(out)["summary"]["steps"] == 1


def test_a_stale_result_from_an_earlier_attempt_is_removed_first(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "result.json").write_text('{"status": "succeeded"}')
    proc = run_stack(["run", "noop", "--out", str(out)])
    assert proc.returncode == 0
    assert read_result(out)["kind"] == "noop"


# A kind registered by the test itself, to make runners misbehave on purpose.
DRIVER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[1])
    from stack.kinds import KINDS, Kind
    from stack.cli import main
    KINDS["misbehave"] = Kind(
        name="misbehave", title="t", description="d",
        params_schema={"type": "object", "properties": {
            "mode": {"type": "string", "default": "raise"}}, "additionalProperties": False},
        default_timeout_s=10, runner="misbehaving_runner:run")
    sys.exit(main(sys.argv[2:]))
    """
)

RUNNER = textwrap.dedent(
    """
    import os, subprocess, sys
    from stack.runtime import Measurement, RunResult

    def run(params, ctx):
        mode = params["mode"]
        if mode == "raise":
            ctx.emit.progress(10, "about to fail")
            raise RuntimeError("the GPU caught fire")
        if mode == "noisy":
            print("a stray print")
            sys.stdout.write("no newline")
            os.write(1, b"raw bytes on fd 1\\n")
            subprocess.run([sys.executable, "-c", "print('a child process talking')"])
            ctx.emit.log("a real event")
            return RunResult(summary={"noisy": True})
        if mode == "nan":
            return RunResult(measurements=[Measurement("b", "m", "s", float("nan"))])
        if mode == "wrong-type":
            return {"status": "succeeded"}
        if mode == "cache":
            return RunResult(summary={"cache_dir": str(ctx.cache_dir)})
    """
)


def run_misbehaving(tmp_path, mode, **env):
    (tmp_path / "misbehaving_runner.py").write_text(RUNNER)
    out = tmp_path / "out"
    params = write_params(tmp_path, {"mode": mode})
    return subprocess.run(
        [
            sys.executable,
            "-c",
            DRIVER,
            str(tmp_path),
            "run",
            "misbehave",
            "--params",
            str(params),
            "--out",
            str(out),
        ],
        cwd=REPO_ROOT,
        env=dict(os.environ, PYTHONPATH=str(REPO_ROOT), **env),
        capture_output=True,
        text=True,
        timeout=START_S,
        check=False,
    ), out


def test_a_runner_that_raises_exits_3_with_the_error_and_its_traceback_as_an_event(tmp_path):
    proc, out = run_misbehaving(tmp_path, "raise")
    assert proc.returncode == 3
    document = read_result(out)
    assert document["status"] == "errored"
    assert document["error"] == "RuntimeError: the GPU caught fire"
    errors = [e for e in event_lines(proc.stdout) if e.get("level") == "error"]
    assert "Traceback" in errors[0]["message"]
    assert "the GPU caught fire" in errors[0]["message"]


def test_stray_output_of_a_runner_never_reaches_the_event_stream(tmp_path):
    proc, out = run_misbehaving(tmp_path, "noisy")
    assert proc.returncode == 0, proc.stderr
    events = event_lines(proc.stdout)  # every line is JSON
    assert {"event": "log", "level": "info", "message": "a real event"} in events
    for stray in ("a stray print", "no newline", "raw bytes on fd 1", "a child process talking"):
        assert stray not in proc.stdout
        assert stray in proc.stderr
    assert read_result(out)["summary"] == {"noisy": True}


@pytest.mark.parametrize(
    ("mode", "error"),
    [("nan", "result not serialisable"), ("wrong-type", "TypeError: runner returned dict")],
)
def test_a_runner_returning_something_unusable_ends_errored(tmp_path, mode, error):
    proc, out = run_misbehaving(tmp_path, mode)
    assert proc.returncode == 3
    assert read_result(out)["error"].startswith(error)


def test_the_cache_folder_the_worker_names_reaches_the_runner_as_ctx_cache_dir(tmp_path):
    cache = tmp_path / "cache"
    proc, out = run_misbehaving(tmp_path, "cache", ROCPATH_CACHE_DIR=str(cache))
    assert proc.returncode == 0, proc.stderr
    assert read_result(out)["summary"] == {"cache_dir": str(cache)}
    proc, out = run_misbehaving(tmp_path, "cache", ROCPATH_CACHE_DIR="")
    assert read_result(out)["summary"] == {"cache_dir": "None"}


def test_an_unknown_kind_exits_2_and_writes_no_result(tmp_path):
    out = tmp_path / "out"
    proc = run_stack(["run", "hipify-scann", "--out", str(out)])
    assert proc.returncode == 2
    assert "unknown kind 'hipify-scann'" in proc.stderr
    assert proc.stdout == ""
    assert not (out / "result.json").exists()


@pytest.mark.parametrize(
    ("content", "message"),
    [(None, "cannot read params"), ("{not json", "not valid JSON"), ("[1, 2]", "JSON object")],
)
def test_unreadable_params_exit_2_and_write_no_result(tmp_path, content, message):
    params = tmp_path / "params.json"
    if content is not None:
        params.write_text(content)
    out = tmp_path / "out"
    proc = run_stack(["run", "noop", "--params", str(params), "--out", str(out)])
    assert proc.returncode == 2
    assert message in proc.stderr
    assert not (out / "result.json").exists()


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["run"],
        ["run", "noop"],
        ["run", "noop", "probe", "--out", "x"],
        ["frobnicate"],
        ["run", "noop", "--out", "x", "--colour", "red"],
        ["run", "noop", "--out"],
    ],
)
def test_a_bad_command_line_exits_2_with_usage(args):
    proc = run_stack(args)
    assert proc.returncode == 2
    assert "usage: python -m stack run KIND" in proc.stderr


def test_kinds_lists_every_kind_as_json():
    proc = run_stack(["kinds"])
    assert proc.returncode == 0
    names = [kind["name"] for kind in json.loads(proc.stdout)]
    assert names == sorted(KINDS) and {"noop", "probe", "sandbox-check"} <= set(names)


def test_sigterm_during_a_run_ends_it_errored_with_a_result(tmp_path):
    out = tmp_path / "out"
    params = write_params(tmp_path, {"seconds": 30, "steps": 300})
    proc = subprocess.Popen(
        [sys.executable, "-m", "stack", "run", "noop", "--params", str(params), "--out", str(out)],
        cwd=REPO_ROOT,
        env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = proc.stdout.readline()  # the runner is running once it reports progress
        assert parse_event(first)["event"] == "progress"
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=STOP_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == 3
    document = read_result(out)
    assert document["status"] == "errored"
    assert document["error"] == "Terminated: received SIGTERM"


def test_a_run_started_with_stdout_and_stderr_closed_still_writes_its_result(tmp_path):
    out = tmp_path / "out"

    def close_stdio():
        os.close(1)
        os.close(2)

    proc = subprocess.run(
        [sys.executable, "-m", "stack", "run", "noop", "--out", str(out)],
        cwd=REPO_ROOT,
        env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)),
        preexec_fn=close_stdio,
        timeout=START_S,
        check=False,
    )
    assert proc.returncode == 0
    assert read_result(out)["status"] == "succeeded"
