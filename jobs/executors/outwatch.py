"""The out-folder watch: a running job's out/ measured against its caps (bytes, entries)
and the job killed the moment it is over, whatever runs it (a container, a local runner
process). Ingest refuses such a folder anyway; by then a writer could have filled the
disk, which the watch does not wait for."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from django.conf import settings

from jobs.executors.base import JobSpec
from jobs.outputs import Refused, disk_usage, largest_file

# How often a running job's out folder is measured against ROCPATH_OUT_MAX_BYTES (at
# least; a folder that takes long to walk is walked less often): what a job can write at
# most is the cap plus what it writes in this time and the kill's. No single file can grow
# past ROCPATH_ARTIFACT_MAX_BYTES at all (RLIMIT_FSIZE).
OUT_CHECK_S = 0.02
# How long stop() waits for a watch in the middle of a walk; past it the thread runs on,
# but can no longer kill anything (its pid may be another process's by then).
STOP_WAIT_S = 5.0


class OutWatch(threading.Thread):
    """Measures a running job's out folder and calls ``kill`` when it is over its caps:
    a thread of its own, so a busy log does not delay it."""

    def __init__(self, spec: JobSpec, kill: Callable[[], None]) -> None:
        super().__init__(daemon=True, name=f"out-watch-{spec.job_id}")
        self.spec, self.kill = spec, kill
        self.problem = ""
        self.done = threading.Event()
        self._lock = threading.Lock()  # a kill and stop() never cross
        self._stopped = False

    def run(self) -> None:
        while not self.done.is_set():
            started = time.monotonic()
            problem = out_folder_problem(self.spec)
            if problem:
                with self._lock:
                    if not self._stopped:
                        self.problem = problem
                        self.kill()  # no grace: a writer fills a disk in seconds
                return
            # a large folder is walked less often: the watch takes at most a tenth of a CPU
            self.done.wait(max(OUT_CHECK_S, 10 * (time.monotonic() - started)))

    def stop(self) -> None:
        """After this returns the watch kills nothing, even if its walk is still going."""
        with self._lock:
            self._stopped = True
        self.done.set()
        self.join(timeout=STOP_WAIT_S)

    def final_problem(self) -> str:
        """Why the job was stopped, with what its folder held once it was dead, or ''."""
        if not self.problem:
            return ""
        try:
            final = disk_usage(self.spec.out_dir, max_entries=settings.ROCPATH_OUT_MAX_FILES)
        except Refused:
            return self.problem
        return f"{self.problem}; {final} bytes by the time it was killed"


def out_folder_problem(spec: JobSpec) -> str:
    """Why a running job must be stopped for what it wrote to out/, or ''."""
    try:
        used = disk_usage(spec.out_dir, max_entries=settings.ROCPATH_OUT_MAX_FILES)
    except Refused as exc:
        return f"the job was stopped: {exc}"
    if used > settings.ROCPATH_OUT_MAX_BYTES:
        found = largest_file(spec.out_dir, max_entries=settings.ROCPATH_OUT_MAX_FILES)
        # The file that filled it, which is what the job's author has to look at.
        largest = f", the largest out/{found[0]} at {found[1]} bytes" if found else ""
        return (
            f"the job was stopped: its out folder went over its cap of "
            f"{settings.ROCPATH_OUT_MAX_BYTES} bytes ({used} bytes written{largest}; "
            "ROCPATH_OUT_MAX_BYTES)"
        )
    return ""
