"""A runner's event line nested too deep is a log line, not a crash of the job's reader.

Red team finding: the event parser (then parse_stdout_line) caught ValueError from
json.loads but not RecursionError, which a line of 30,000 nested brackets (60 KB, under
ROCPATH_EVENT_LINE_MAX_BYTES) raises. Live, team code inside a compile-check (reached
through the hipcc shell hole, then pidfd_getfd on the runner, which shares its uid and is
dumpable) wrote such a line to the runner's event fd: the job ended "errored: internal
error while running the job: RecursionError: maximum recursion depth exceeded while
decoding a JSON array". The docker reader uses the same function. Now
contract.parse_event measures the nesting before json.loads: deeper than
contract.MAX_JSON_DEPTH, not strict, it is a plain line; strict, a ContractError.
"""

from __future__ import annotations

import json
import sys

import pytest
from django.conf import settings

from jobs.executors.base import JobSpec
from jobs.executors.local import LocalExecutor
from stack import contract
from tests.hooks import Recorder

DEEP = (
    '{"event": "log", "level": "info", "message": "deep", "a": ' + "[" * 30000 + "]" * 30000 + "}"
)


def test_a_deeply_nested_event_line_is_not_an_event():
    assert len(DEEP.encode()) < settings.ROCPATH_EVENT_LINE_MAX_BYTES
    assert contract.parse_event(DEEP, strict=False) is None


def test_a_metric_event_that_nests_past_the_limit_is_not_an_event():
    # json.loads parses 900 levels, but the stored event's data would then break every read
    deep = "[" * 900 + "]" * 900
    line = '{"event": "metric", "name": "x", "value": 1, "a": ' + deep + "}"
    assert contract.parse_event(line, strict=False) is None
    shallow = '{"event": "metric", "name": "x", "value": 1, "a": [[1]]}'
    assert contract.parse_event(shallow, strict=False)["a"] == [[1]]


def test_strict_parsing_of_a_deep_line_raises_the_contracts_error():
    with pytest.raises(contract.ContractError, match="nested too deeply"):
        contract.parse_event(DEEP)


def test_nesting_is_counted_outside_strings_only():
    assert contract.nesting_depth('{"a": "[[[[\\"{{{{"}') == 1
    assert contract.nesting_depth(b"[[[]], {}]") == 3


@pytest.mark.process
def test_a_runner_printing_a_deeply_nested_line_ends_normally(monkeypatch, tmp_path):
    job_dir = tmp_path / "987"
    job_dir.mkdir()
    spec = JobSpec(job_id=987, kind="noop", job_dir=job_dir, timeout_s=60)
    spec.params_file.write_text("{}")
    program = f"import sys; sys.stdout.write({DEEP!r} + '\\n'); print('after')"
    python = settings.ROCPATH_STACK_PYTHON or sys.executable
    monkeypatch.setattr(LocalExecutor, "command", lambda self, spec: [python, "-c", program])
    recorder = Recorder()
    outcome = LocalExecutor().run(spec, recorder)
    assert outcome.exit_code == 0, outcome.stderr_tail
    assert ("stdout", "after") in recorder.lines
    assert json.dumps(recorder.events).count("deep") == 0
