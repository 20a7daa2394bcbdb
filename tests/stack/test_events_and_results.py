"""The event emitter and the result writer: what the worker reads, line by line and at the end."""

import io
import json
import re
from datetime import datetime

import pytest
from stack_helpers import Captured

from stack.contract import ERRORED, parse_event, validate_result
from stack.events import Emitter
from stack.runtime import (
    Artifact,
    Measurement,
    RunResult,
    build_result,
    utc_now_iso,
    write_result,
)


class CountingStream(io.StringIO):
    def __init__(self):
        super().__init__()
        self.flushes = 0

    def flush(self):
        self.flushes += 1
        super().flush()


def test_emitter_writes_one_flushed_json_line_per_event():
    stream = CountingStream()
    emitter = Emitter(stream)
    emitter.progress(42, "half way")
    emitter.log("hello\nworld", level="warning")
    emitter.metric("bandwidth", 1.5, "TB/s")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 3
    assert stream.flushes >= 3
    assert [parse_event(line) for line in lines] == [
        {"event": "progress", "pct": 42.0, "message": "half way"},
        {"event": "log", "level": "warning", "message": "hello\nworld"},
        {"event": "metric", "name": "bandwidth", "value": 1.5, "unit": "TB/s"},
    ]


def test_emitter_clamps_progress_to_0_100():
    captured = Captured()
    captured.emitter.progress(250)
    captured.emitter.progress(-3)
    captured.emitter.progress(float("nan"))
    assert [e["pct"] for e in captured.events] == [100.0, 0.0, 0.0]


def test_emitter_refuses_an_unknown_log_level():
    with pytest.raises(ValueError, match="level"):
        Emitter(io.StringIO()).log("x", level="loud")


def test_emitter_turns_a_non_finite_metric_into_a_warning():
    captured = Captured()
    captured.emitter.metric("gflops", float("inf"))
    assert captured.events[0]["event"] == "log"
    assert captured.events[0]["level"] == "warning"


def test_emitter_keeps_quiet_once_the_reader_has_gone():
    class Broken(io.StringIO):
        writes = 0

        def write(self, text):
            self.writes += 1
            raise BrokenPipeError

    stream = Broken()
    emitter = Emitter(stream)
    emitter.progress(1)
    emitter.log("still alive")  # no exception: result.json is the record, not the stream
    emitter.close()
    assert stream.writes == 1  # the first broken pipe stops the stream for good


def test_timestamps_are_iso8601_utc_with_z():
    stamp = utc_now_iso(1764496800.25)
    assert stamp == "2025-11-30T10:00:00.250000Z"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", utc_now_iso())
    assert datetime.fromisoformat(stamp).utcoffset().total_seconds() == 0


def test_a_built_result_validates(tmp_path):
    (tmp_path / "raw.csv").write_text("a,b\n")
    run = RunResult(
        measurements=[Measurement("bench", "time", "s", 1.0, samples=[1.0], better="lower")],
        artifacts=[Artifact("raw.csv", "text/csv", "the raw numbers")],
        summary={"ok": True},
    )
    document = build_result("noop", run, utc_now_iso(), utc_now_iso(), tmp_path)
    validate_result(document)


def test_build_result_refuses_an_artifact_that_is_not_in_out(tmp_path):
    run = RunResult(artifacts=[Artifact("missing.txt")])
    with pytest.raises(ValueError, match="not a file in OUT"):
        build_result("noop", run, utc_now_iso(), utc_now_iso(), tmp_path)


def test_build_result_refuses_an_artifact_outside_out(tmp_path):
    run = RunResult(artifacts=[{"path": "../x", "content_type": "a/b", "description": ""}])
    with pytest.raises(ValueError, match=r"\.\."):
        build_result("noop", run, utc_now_iso(), utc_now_iso(), tmp_path)


def test_build_result_gives_an_errored_result_a_reason_if_the_runner_gave_none():
    document = build_result("noop", RunResult(status=ERRORED), utc_now_iso(), utc_now_iso())
    assert document["error"]


def test_write_result_replaces_atomically_and_leaves_no_temporary_file(tmp_path):
    document = build_result("noop", RunResult(), utc_now_iso(), utc_now_iso())
    write_result(tmp_path, document)
    write_result(tmp_path, document)
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]
    assert json.loads((tmp_path / "result.json").read_text()) == document


def test_write_result_refuses_nan_and_leaves_nothing_behind(tmp_path):
    run = RunResult(measurements=[Measurement("b", "m", "s", float("nan"))])
    document = build_result("noop", run, utc_now_iso(), utc_now_iso())
    with pytest.raises(ValueError):
        write_result(tmp_path, document)
    assert list(tmp_path.iterdir()) == []


def test_write_artifact_writes_under_out_and_refuses_escapes(ctx):
    artifact = ctx.write_artifact("probe/x.txt", "text", description="d")
    assert (ctx.out / "probe" / "x.txt").read_text() == "text"
    assert artifact.to_dict() == {
        "path": "probe/x.txt",
        "content_type": "text/plain; charset=utf-8",
        "description": "d",
    }
    with pytest.raises(ValueError, match=r"\.\."):
        ctx.write_artifact("../escape.txt", "x")
