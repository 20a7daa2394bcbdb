"""A job's error as a person reads it: the cause first, then the path it happened at.

A runner that fails says why in one line of the job's error. Python's own words for an
OSError put the class and the errno first ("OSError: [Errno 28] No space left on device:
'/tmp/x'"), and a child's stderr ends in a traceback whose last lines are source and
``^^^^`` markers: a message cut from its tail started with those. Here the cause is taken
from the exception (or the traceback's exception line) and said as "No space left on
device: /tmp/x"; a full out folder names its largest file, which is what filled it.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path

# The errors that mean "the folder is full", not "this file is wrong".
FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
# A traceback's exception line: a (dotted) class name at the start of the line, then ": ".
_EXCEPTION_LINE = re.compile(
    r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Full))(?:: (.*))?$"
)
_ERRNO_TEXT = re.compile(
    r"^\[Errno \d+\] (?P<what>[^:]+?)(?:: '(?P<path>.*?)')?(?: -> '(?P<to>.*)')?$"
)
MAX_CAUSE_CHARS = 2000
# A full folder is walked this far for its largest file (a sandbox's /tmp, an out folder).
MAX_WALK_ENTRIES = 20000


def cause_of(exc: BaseException) -> str:
    """``exc`` as one line: an OSError's cause and path ("No space left on device:
    /tmp/x"), anything else "Type: message"."""
    if isinstance(exc, OSError) and exc.strerror:
        paths = [str(p) for p in (exc.filename, exc.filename2) if p is not None]
        text = f"{exc.strerror}: {' -> '.join(paths)}" if paths else exc.strerror
    else:
        message = str(exc).strip()
        text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    return text[:MAX_CAUSE_CHARS]


def traceback_cause(stderr: str) -> str:
    """The cause a Python traceback in ``stderr`` ends with, as ``cause_of`` says it; ""
    when there is no exception line (a tool's own error text, not a Python crash)."""
    for line in reversed(stderr.splitlines()):
        found = _EXCEPTION_LINE.match(line.rstrip())
        if not found:
            continue
        name, message = found.group(1), (found.group(2) or "").strip()
        errno_text = _ERRNO_TEXT.match(message)
        if errno_text:
            paths = [p for p in (errno_text["path"], errno_text["to"]) if p]
            what = errno_text["what"]
            return (f"{what}: {' -> '.join(paths)}" if paths else what)[:MAX_CAUSE_CHARS]
        short = name.rsplit(".", 1)[-1]
        return (f"{short}: {message}" if message else short)[:MAX_CAUSE_CHARS]
    return ""


def largest_file(folder: Path, max_entries: int = MAX_WALK_ENTRIES) -> tuple[str, int] | None:
    """The largest regular file under ``folder`` (its path relative to it, its size), links
    not followed and at most ``max_entries`` entries looked at; None when it holds none."""
    best: tuple[str, int] | None = None
    seen = 0
    for parent, dirs, names in os.walk(folder, followlinks=False):
        seen += len(dirs) + len(names)
        for name in names:
            path = os.path.join(parent, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue  # gone meanwhile
            if stat.S_ISREG(st.st_mode) and (best is None or st.st_size > best[1]):
                best = (os.path.relpath(path, folder), st.st_size)
        if seen >= max_entries:
            break
    return best


def mount_point(path: Path) -> Path:
    """The top of the filesystem ``path`` is on (the sandbox's /tmp, a tmpfs out folder)."""
    path = Path(os.path.abspath(path))
    while not path.exists() and path != path.parent:
        path = path.parent
    device = path.stat().st_dev
    while path != path.parent and path.parent.stat().st_dev == device:
        path = path.parent
    return path


def full_disk_text(path: Path) -> str:
    """What filled the filesystem of ``path``: "/tmp is full; its largest file is /tmp/x
    (16777216 bytes)", the folder alone when it holds no file."""
    try:
        top = mount_point(path)
    except OSError:
        return str(path)
    found = largest_file(top)
    if found is None:
        return f"{top} is full"
    return f"{top} is full; its largest file is {top / found[0]} ({found[1]} bytes)"


def full_disk_cause(exc: OSError, path: Path) -> str:
    """A full disk met writing under ``path``, said with the file that filled it; any other
    OSError as ``cause_of`` says it."""
    if exc.errno not in FULL_ERRNOS:
        return cause_of(exc)
    return f"{exc.strerror}: {full_disk_text(path)}"[:MAX_CAUSE_CHARS]
