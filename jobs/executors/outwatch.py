"""The out-folder watch: a running job's out/ measured against its caps (bytes, entries)
and the job killed the moment it is over, whatever runs it (a container, a local runner
process). Ingest refuses such a folder anyway; by then a writer could have filled the
disk, which the watch does not wait for."""

from __future__ import annotations

import ctypes
import os
import select
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path

from django.conf import settings

from jobs.executors.base import JobSpec
from jobs.outputs import Refused, disk_usage, largest_file

# How often a running job's out folder is measured against ROCPATH_OUT_MAX_BYTES when
# nothing tells the watch it was written to (at least; a folder that takes long to walk is
# walked less often). No single file can grow past ROCPATH_ARTIFACT_MAX_BYTES at all
# (RLIMIT_FSIZE).
OUT_CHECK_S = 0.02
# Writes in out/ wake the watch at once (inotify), at most this often: a writer to a
# tmpfs puts 70 MiB in the 20 ms of OUT_CHECK_S, and a 64 MiB cap was overshot by 74 MiB.
OUT_WRITE_GAP_S = 0.001
# How many of out/'s folders are watched for writes; past that, they are only polled.
MAX_WATCHED_FOLDERS = 256
# How long stop() waits for a watch in the middle of a walk; past it the thread runs on,
# but can no longer kill anything (its pid may be another process's by then).
STOP_WAIT_S = 5.0


# inotify(7): no binding in the standard library, and the one on PyPI runs `ldconfig -p`
# in the worker to find libc; the calls are two, through the process's own libc.
IN_MODIFY, IN_MOVED_TO, IN_CREATE = 0x2, 0x80, 0x100
IN_ONLYDIR, IN_DONT_FOLLOW, IN_ISDIR = 0x01000000, 0x02000000, 0x40000000
IN_NONBLOCK, IN_CLOEXEC = os.O_NONBLOCK, os.O_CLOEXEC
EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then len bytes of name
_libc = ctypes.CDLL(None, use_errno=True)


class Writes:
    """inotify on out/ and the folders made in it: a wait that ends at the job's next
    write there. Where inotify cannot be had (no more instances or watches), ``open``
    says None and the watch polls."""

    # a folder the job swaps for a link is not followed
    MASK = IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_ONLYDIR | IN_DONT_FOLLOW

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.folders: dict[int, Path] = {}

    @classmethod
    def open(cls, root: Path) -> Writes | None:
        fd = _libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            return None
        writes = cls(fd)
        if not writes.add(root):
            writes.close()
            return None
        return writes

    def add(self, folder: Path) -> bool:
        if len(self.folders) >= MAX_WATCHED_FOLDERS:
            return False
        wd = _libc.inotify_add_watch(self.fd, os.fsencode(folder), self.MASK)
        if wd < 0:  # gone already, or not a folder: the poll still measures it
            return False
        self.folders[wd] = folder
        return True

    def wait(self, timeout: float) -> None:
        """Until the job writes in out/, ``timeout`` seconds at most; the folders it made
        meanwhile are watched from now on."""
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return
        try:
            data = os.read(self.fd, 64 * 1024)
        except BlockingIOError:
            return
        at = 0
        while at + EVENT.size <= len(data):
            wd, mask, _, size = EVENT.unpack_from(data, at)
            name = data[at + EVENT.size : at + EVENT.size + size].rstrip(b"\0")
            at += EVENT.size + size
            if mask & (IN_CREATE | IN_MOVED_TO) and mask & IN_ISDIR and wd in self.folders:
                self.add(self.folders[wd] / os.fsdecode(name))

    def close(self) -> None:
        os.close(self.fd)


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
        writes = Writes.open(self.spec.out_dir)
        try:
            while not self.done.is_set():
                started = time.monotonic()
                problem = out_folder_problem(self.spec)
                if problem:
                    with self._lock:
                        if not self._stopped:
                            self.problem = problem
                            self.kill()  # no grace: a writer fills a disk in seconds
                    return
                # A large folder is walked less often: the watch takes a tenth of a CPU
                # at most, however fast the job writes.
                spent = 10 * (time.monotonic() - started)
                if writes is None:
                    self.done.wait(max(OUT_CHECK_S, spent))
                    continue
                self.done.wait(max(OUT_WRITE_GAP_S, spent))
                writes.wait(OUT_CHECK_S)
        finally:
            if writes is not None:
                writes.close()

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
