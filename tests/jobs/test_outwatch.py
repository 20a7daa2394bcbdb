"""The out-folder watch of a running job, on its own thread."""

from __future__ import annotations

import threading
import time

from jobs.executors import outwatch
from jobs.executors.base import JobSpec


def test_a_watch_stopped_in_the_middle_of_a_walk_kills_nothing_after(tmp_path, monkeypatch):
    # stop() waited 5 s for the walk, then returned while the thread ran on: a kill after
    # that could reach a process that had taken the runner's pid.
    walking, finish = threading.Event(), threading.Event()

    def slow_walk(spec: JobSpec) -> str:
        walking.set()
        finish.wait(10)
        return "the job was stopped: its out folder went over its cap"

    monkeypatch.setattr(outwatch, "out_folder_problem", slow_walk)
    monkeypatch.setattr(outwatch, "STOP_WAIT_S", 0.05)
    kills: list[str] = []
    watch = outwatch.OutWatch(JobSpec(job_id=1, kind="noop", job_dir=tmp_path, timeout_s=30),
                              kill=lambda: kills.append("kill"))  # fmt: skip
    watch.start()
    assert walking.wait(10)
    watch.stop()
    finish.set()
    watch.join(10)
    assert not watch.is_alive() and kills == [] and watch.problem == ""


def test_a_write_in_out_or_in_a_folder_made_there_ends_the_wait_at_once(tmp_path):
    # The watch measured every 20 ms whatever the job did: a writer to a tmpfs put 74 MiB
    # past a 64 MiB cap between two looks. Now a write wakes it.
    writes = outwatch.Writes.open(tmp_path)
    assert writes is not None
    try:
        (tmp_path / "deep").mkdir()
        writes.wait(0)  # the folder made is watched from here on
        started = time.monotonic()
        writes.wait(0.3)  # nothing written: the wait runs its course
        assert time.monotonic() - started >= 0.25
        for target in (tmp_path / "a.bin", tmp_path / "deep" / "b.bin"):
            writer = threading.Timer(0.2, target.write_bytes, args=(b"x" * 4096,))
            writer.start()
            started = time.monotonic()
            writes.wait(30)
            assert time.monotonic() - started < 10, target  # woken by the write, not the 30 s
            writer.join()
    finally:
        writes.close()


def test_a_folder_that_cannot_be_watched_is_polled(tmp_path):
    assert outwatch.Writes.open(tmp_path / "gone") is None
