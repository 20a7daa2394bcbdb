"""A local runner's output is read in linear time and each line is bounded in size."""

from __future__ import annotations

import sys
import time

import pytest
from django.conf import settings

from jobs.executors.base import JobSpec
from jobs.executors.local import LocalExecutor
from tests.hooks import Recorder
from tests.waits import LINEAR_RATIO

pytestmark = pytest.mark.process


def _run(tmp_path, monkeypatch, code: str) -> Recorder:
    spec = JobSpec(job_id=5, kind="noop", job_dir=tmp_path / "job", timeout_s=300)
    spec.job_dir.mkdir()
    spec.params_file.write_text("{}")
    python = settings.ROCPATH_STACK_PYTHON or sys.executable
    monkeypatch.setattr(LocalExecutor, "command", lambda self, spec: [python, "-c", code])
    recorder = Recorder()
    LocalExecutor().run(spec, recorder)
    return recorder


def test_a_one_mib_line_is_cut_with_a_note(tmp_path, monkeypatch, settings):
    settings.ROCPATH_LOCAL_ZYGOTE = False
    code = "import sys; sys.stdout.write('x' * 2**20 + '\\n'); sys.stderr.write('y' * 2**20)"
    recorder = _run(tmp_path, monkeypatch, code)
    limit = settings.ROCPATH_EVENT_LINE_MAX_BYTES
    for stream in ("stdout", "stderr"):
        (line,) = [text for where, text in recorder.lines if where == stream]
        assert line.startswith("x" * 100 if stream == "stdout" else "y" * 100)
        assert len(line) < limit + 200
        assert line.endswith(f"[line cut at {limit} bytes]")


def test_a_100_mb_line_without_a_newline_is_read_in_linear_time(tmp_path, monkeypatch, settings):
    settings.ROCPATH_LOCAL_ZYGOTE = False
    code = "import sys\nfor _ in range({}): sys.stdout.write('z' * 10**6)\nsys.stdout.flush()"
    started = time.monotonic()
    (tmp_path / "reference").mkdir()
    _run(tmp_path / "reference", monkeypatch, code.format(10))  # the reference: 10 MB
    reference = time.monotonic() - started
    started = time.monotonic()
    recorder = _run(tmp_path, monkeypatch, code.format(100))
    took = time.monotonic() - started
    (line,) = [text for where, text in recorder.lines if where == "stdout"]
    assert "line cut at" in line and len(line) < settings.ROCPATH_EVENT_LINE_MAX_BYTES + 200
    assert took < LINEAR_RATIO * reference, f"100 MB in {took:.1f} s, 10 MB in {reference:.1f} s"
