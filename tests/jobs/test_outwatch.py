"""The out-folder watch of a running job, on its own thread."""

from __future__ import annotations

import threading

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
