"""The artifact root as a disk: is it writable, is there room, and what a full one says.

A full disk used to show as ``OSError: [Errno 28]`` naming no path, on every job, until
a person found out which disk; and a worker started on a read-only root failed every
job it took. So a worker checks its root before it takes any job (jobs/signals.py), and
an error of a full disk names the path written and how much room its disk has left.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

FULL = (errno.ENOSPC, errno.EDQUOT)


def free_mib(path: Path) -> int:
    """MiB free on the disk that holds ``path`` (or its nearest existing parent)."""
    for folder in (path, *path.parents):
        try:
            return shutil.disk_usage(folder).free // 2**20
        except OSError:
            continue
    return 0


class DiskFull(OSError):
    """Writing ``path`` ran out of room: the message names it and the room left."""

    def __init__(self, path: Path | str, code: int = errno.ENOSPC) -> None:
        self.path = Path(path)
        super().__init__(code, os.strerror(code), str(path))

    def __str__(self) -> str:
        return (
            f"writing {self.path}: the disk holding it has {free_mib(self.path)} MiB free "
            f"({self.strerror})"
        )


def is_full(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in FULL


@contextmanager
def writing(path: Path) -> Iterator[None]:
    """Turn a full disk's OSError while writing ``path`` into a DiskFull naming it."""
    try:
        yield
    except DiskFull:
        raise
    except OSError as exc:
        if exc.errno in FULL:
            raise DiskFull(exc.filename or path, exc.errno) from exc
        raise


def root_problem(root: Path, *, min_free_mb: int) -> str:
    """Why a worker cannot keep jobs' files under ``root``, or '' when it can."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=root, prefix=".rocpath-check-"):
            pass
    except OSError as exc:
        return (
            f"the artifact root {root} is not writable ({exc.strerror or exc}): "
            "set ROCPATH_ARTIFACT_ROOT to a folder this worker can write"
        )
    free = free_mib(root)
    if free < min_free_mb:
        return (
            f"the artifact root {root} has {free} MiB free, less than the "
            f"{min_free_mb} MiB a worker needs to start (ROCPATH_MIN_FREE_MB)"
        )
    return ""
