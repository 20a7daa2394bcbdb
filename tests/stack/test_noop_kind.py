"""The noop kind, run in-process through the CLI's execute()."""

import json
import time

import pytest

from stack.cli import execute
from stack.contract import validate_result
from stack.kinds import get_kind, validate_params
from tests.waits import PROMPT_S


def run_noop(tmp_path, captured, **params):
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    code = execute(
        get_kind("noop"), validate_params("noop", params), out, tmp_path, captured.emitter
    )
    document = json.loads((out / "result.json").read_text())
    validate_result(document)
    return code, document


def test_noop_by_default_succeeds_at_once(tmp_path, captured):
    started = time.monotonic()
    code, document = run_noop(tmp_path, captured)
    assert time.monotonic() - started < PROMPT_S  # no pause of its own
    assert code == 0
    assert document["status"] == "succeeded"
    assert document["kind"] == "noop"
    assert document["error"] is None


def test_noop_sleeps_the_seconds_asked_in_evenly_spread_progress_steps(tmp_path, captured):
    started = time.monotonic()
    run_noop(tmp_path, captured, seconds=0.3, steps=3)
    assert 0.3 <= time.monotonic() - started < PROMPT_S
    progress = [e for e in captured.events if e["event"] == "progress"]
    assert [round(e["pct"]) for e in progress] == [33, 67, 100]
    assert progress[0]["message"] == "step 1 of 3"


def test_noop_measures_the_time_it_slept(tmp_path, captured):
    _, document = run_noop(tmp_path, captured, seconds=0.1)
    (measurement,) = document["measurements"]
    assert measurement["benchmark"] == "noop"
    assert measurement["metric"] == "sleep_s"
    assert measurement["unit"] == "s"
    assert measurement["better"] == "lower"
    assert 0.1 <= measurement["value"] < 1
    assert measurement["samples"] == [measurement["value"]]


def test_noop_writes_an_artifact_of_the_size_asked(tmp_path, captured):
    _, document = run_noop(tmp_path, captured, write_bytes=3 * 1024 * 1024 + 5)
    assert document["artifacts"] == [
        {
            "path": "noop.bin",
            "content_type": "application/octet-stream",
            "description": "3145733 zero bytes written by noop",
        }
    ]
    assert (tmp_path / "out" / "noop.bin").stat().st_size == 3 * 1024 * 1024 + 5


def test_noop_log_lines_go_through_the_emitter(tmp_path, captured):
    run_noop(tmp_path, captured, log_lines=3)
    logs = [e for e in captured.events if e["event"] == "log"]
    assert [e["message"] for e in logs] == [f"noop log line {i} of 3" for i in (1, 2, 3)]


@pytest.mark.parametrize(("status", "code"), [("failed", 1), ("errored", 3)])
def test_noop_ends_with_the_status_asked(tmp_path, captured, status, code):
    exit_code, document = run_noop(tmp_path, captured, exit_status=status)
    assert exit_code == code
    assert document["status"] == status
    assert status in document["error"]
