"""A run the worker stops (SIGTERM: a cancel, a timeout) in the CLI's execute(), in-process."""

from __future__ import annotations

import json

import pytest

from stack.cli import Terminated, execute
from stack.contract import validate_result
from stack.kinds import get_kind, validate_params
from stack.kinds.base import Kind


def test_a_terminated_run_logs_one_info_line_and_no_traceback(
    tmp_path, captured, monkeypatch: pytest.MonkeyPatch
) -> None:
    def runner(params, ctx):
        ctx.emit.progress(40, "asking torch")
        # what stack.cli._on_sigterm raises when the worker's SIGTERM arrives
        raise Terminated("received SIGTERM")

    monkeypatch.setattr(Kind, "load_runner", lambda self: runner)
    out = tmp_path / "out"
    out.mkdir()
    code = execute(get_kind("noop"), validate_params("noop", {}), out, tmp_path, captured.emitter)

    logs = [e for e in captured.events if e["event"] == "log"]
    assert [(e["level"], e["message"]) for e in logs] == [
        ("info", "canceled: received SIGTERM (the worker stopped the run)")
    ]
    assert not any("Traceback" in e["message"] for e in logs)
    document = json.loads((out / "result.json").read_text())
    validate_result(document)
    assert document["status"] == "errored" and code == 3
    assert document["error"] == "Terminated: received SIGTERM"


def test_a_runner_that_raises_still_logs_its_traceback_as_an_error(
    tmp_path, captured, monkeypatch: pytest.MonkeyPatch
) -> None:
    def runner(params, ctx):
        raise RuntimeError("a bug")

    monkeypatch.setattr(Kind, "load_runner", lambda self: runner)
    out = tmp_path / "out"
    out.mkdir()
    execute(get_kind("noop"), validate_params("noop", {}), out, tmp_path, captured.emitter)
    (log,) = [e for e in captured.events if e["event"] == "log"]
    assert log["level"] == "error" and log["message"].startswith("Traceback")
