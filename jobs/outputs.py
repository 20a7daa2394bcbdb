"""Reading what a job left in its out folder, as input from someone we do not trust.

A runner (or its container) controls every name under out/: it can make result.json
a link to another team's result, a FIFO that blocks whoever opens it, a link to
/dev/zero, or a hard link to a server file it could read but never download. So
nothing here goes through a path: the out folder is opened once as a directory fd
and every name below it is opened relative to its parent's fd with O_NOFOLLOW, so
no component can be a link or be swapped for one. Only regular files with one link
are read, their size is checked before a byte is read, opening never blocks
(O_NONBLOCK), and artifacts are copied, hashed on the way, into a folder of the
server's that the job cannot write: what is downloaded later is that copy.

Everything here runs before the conclude transaction opens, never inside it.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import stat
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from jobs.storage import writing
from stack import contract

FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
COPY_BLOCK = 1 << 20
MAX_DEPTH = 32
MAX_PATH_CHARS = 500  # Artifact.path


class Refused(Exception):
    """A file of the out folder that is not read; the message says which and why."""


@dataclass(frozen=True)
class Copied:
    """An artifact as copied into the server's folder."""

    path: str  # relative, "/"-separated, as found in out/
    size: int
    sha256: str


@dataclass
class Collected:
    artifacts: list[Copied] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # one readable note per refusal


def _describe(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a folder"),
    ):
        if test(mode):
            return name
    return "of an unknown type"


def _check(what: str, st: os.stat_result, max_bytes: int, cap_name: str) -> None:
    if stat.S_ISLNK(st.st_mode):
        raise Refused(f"{what} is a symbolic link: links out of a job's out folder are not read")
    if not stat.S_ISREG(st.st_mode):
        raise Refused(f"{what} is not a regular file ({_describe(st.st_mode)})")
    if st.st_nlink != 1:
        raise Refused(
            f"{what} has {st.st_nlink} hard links: a file linked from outside the out "
            "folder is not read"
        )
    if st.st_size > max_bytes:
        raise Refused(
            f"{what} is {st.st_size} bytes, over the cap of {max_bytes} bytes ({cap_name})"
        )


def open_regular(dir_fd: int, name: str, *, what: str, max_bytes: int, cap_name: str) -> int:
    """An fd on ``name`` in ``dir_fd``: a regular file with one link, within ``max_bytes``.

    The entry is looked at first (lstat) so that a FIFO or a device is never even
    opened; the fd's own fstat then decides, so a swap between the two changes nothing.
    """
    _check(what, os.stat(name, dir_fd=dir_fd, follow_symlinks=False), max_bytes, cap_name)
    try:
        fd = os.open(name, FILE_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Refused(
                f"{what} is a symbolic link: links out of a job's out folder are not read"
            ) from None
        raise
    try:
        _check(what, os.fstat(fd), max_bytes, cap_name)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_folder(path: Path) -> int:
    try:
        return os.open(path, DIR_FLAGS)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise Refused("the out folder is not a folder of its own (a link?)") from None
        raise


def read_bounded(fd: int, limit: int) -> bytes:
    """At most ``limit`` bytes: a file that grows after its fstat is cut, never read on."""
    chunks, left = [], limit
    while left > 0:
        chunk = os.read(fd, min(COPY_BLOCK, left))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_result(
    out_dir: Path,
    name: str,
    *,
    max_bytes: int,
    cap_name: str,
    max_depth: int = contract.MAX_JSON_DEPTH,
) -> bytes:
    """The bytes of out/<name> (result.json); FileNotFoundError when there is none.

    Refused when its JSON nests deeper than ``max_depth``, read before anyone parses it:
    json.loads fails past about 1,000 levels, and a document it can still parse (900
    deep) is stored and then breaks every later read of the job's row.
    """
    folder = open_folder(out_dir)
    try:
        fd = open_regular(folder, name, what=name, max_bytes=max_bytes, cap_name=cap_name)
    finally:
        os.close(folder)
    try:
        raw = read_bounded(fd, max_bytes)
    finally:
        os.close(fd)
    if contract.nesting_depth(raw, max_depth) > max_depth:
        raise Refused(f"{name} is invalid: nested too deeply (at most {max_depth} levels)")
    return raw


def name_problem(name: str) -> str | None:
    """Why an entry's name cannot be an artifact's path, or None."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "its name is not valid UTF-8"
    if "\\" in name:
        return "its name holds a backslash"
    if any(unicodedata.category(c).startswith("C") for c in name):
        return "its name holds control or formatting characters"
    return None


def _shown(rel: str) -> str:
    """The path as it can be shown on a page: escaped when its name is refused."""
    return ascii(rel) if name_problem(rel) else rel


def walk(folder_fd: int, *, max_entries: int) -> Iterator[tuple[int, str, os.stat_result]]:
    """(parent fd, relative path, lstat) of every entry below ``folder_fd``, in name order.

    Folders are entered through their parent's fd with O_NOFOLLOW; the walk stops at
    MAX_DEPTH and after ``max_entries`` entries (raising Refused, once, at that point).
    A parent fd is only valid while its entries are being handed out.
    """
    seen = 0
    stack: list[tuple[int, str, int]] = [(os.dup(folder_fd), "", 0)]
    try:
        while stack:
            fd, prefix, depth = stack.pop()
            subfolders: list[tuple[int, str, int]] = []
            try:
                for name in sorted(os.listdir(fd)):
                    seen += 1
                    if seen > max_entries:
                        raise Refused(
                            f"the out folder holds more than {max_entries} entries: "
                            "the rest was not read (ROCPATH_OUT_MAX_FILES)"
                        )
                    rel = f"{prefix}{name}"
                    try:
                        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    yield fd, rel, st
                    if stat.S_ISDIR(st.st_mode) and depth < MAX_DEPTH and not name_problem(name):
                        try:
                            child = os.open(name, DIR_FLAGS, dir_fd=fd)
                        except OSError:
                            continue  # swapped for a link or gone: nothing below it is read
                        subfolders.append((child, f"{rel}/", depth + 1))
                stack.extend(reversed(subfolders))
                subfolders = []
            finally:
                os.close(fd)
                for child, _, _ in subfolders:
                    os.close(child)
    finally:
        for fd, _, _ in stack:
            os.close(fd)


def disk_usage(out_dir: Path, *, max_entries: int) -> int:
    """Bytes the out folder holds, for a running job's check: a file counts with its size
    or its allocated blocks, whichever is more (a sparse file is refused at ingest anyway)."""
    try:
        folder = open_folder(out_dir)
    except (OSError, Refused):
        return 0
    total = 0
    try:
        for _, _, st in walk(folder, max_entries=max_entries):
            total += max(st.st_size, st.st_blocks * 512)  # written, or allocated
    finally:
        os.close(folder)
    return total


def largest_file(out_dir: Path, *, max_entries: int) -> tuple[str, int] | None:
    """The out folder's largest regular file (its path as it can be shown, its size), the
    walk as careful as disk_usage's; None when it holds none. What filled a folder over
    its cap is named by this, not the result.json that no longer fit."""
    try:
        folder = open_folder(out_dir)
    except (OSError, Refused):
        return None
    best: tuple[str, int] | None = None
    try:
        for _, rel, st in walk(folder, max_entries=max_entries):
            if stat.S_ISREG(st.st_mode) and (best is None or st.st_size > best[1]):
                best = (_shown(rel), st.st_size)
    except Refused:
        pass  # past max_entries: the largest of those seen
    finally:
        os.close(folder)
    return best


def collect_artifacts(
    out_dir: Path,
    dest: Path,
    *,
    skip: str,
    max_file_bytes: int,
    max_total_bytes: int,
    max_entries: int,
) -> Collected:
    """Copy every acceptable regular file of out/ (``skip`` aside) into ``dest``.

    ``dest`` is the server's (made fresh here); a refused entry is left where it is
    and named in ``refused``.
    """
    collected = Collected()
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True, mode=0o750)
    try:
        folder = open_folder(out_dir)
    except FileNotFoundError:
        return collected
    except Refused as exc:
        collected.refused.append(str(exc))
        return collected
    total = 0
    try:
        for parent, rel, st in walk(folder, max_entries=max_entries):
            if rel == skip:
                continue
            shown = f"out/{_shown(rel)}"
            problem = name_problem(rel.rsplit("/", 1)[-1])
            if problem is None and len(rel) > MAX_PATH_CHARS:
                problem = f"its path is longer than {MAX_PATH_CHARS} characters"
            if problem:
                collected.refused.append(f"{shown} refused: {problem}")
                continue
            if stat.S_ISDIR(st.st_mode):
                continue
            left = max_total_bytes - total
            if stat.S_ISREG(st.st_mode) and st.st_size > left and st.st_size <= max_file_bytes:
                collected.refused.append(
                    f"{shown} refused: the out folder is over its cap of {max_total_bytes} "
                    "bytes (ROCPATH_OUT_MAX_BYTES)"
                )
                continue
            try:
                fd = open_regular(
                    parent,
                    rel.rsplit("/", 1)[-1],
                    what=shown,
                    max_bytes=max_file_bytes,
                    cap_name="ROCPATH_ARTIFACT_MAX_BYTES",
                )
            except Refused as exc:
                collected.refused.append(f"{exc}: refused")
                continue
            except OSError as exc:
                collected.refused.append(f"{shown} could not be read: {exc.strerror}")
                continue
            try:
                copied = _copy(fd, os.fstat(fd).st_size, dest, rel)
            finally:
                os.close(fd)
            total += copied.size
            collected.artifacts.append(copied)
    except Refused as exc:
        collected.refused.append(str(exc))
    finally:
        os.close(folder)
    return collected


def _copy(fd: int, size: int, dest: Path, rel: str) -> Copied:
    """Copy ``size`` bytes from ``fd`` to dest/rel, hashing them on the way."""
    target = dest / rel
    digest = hashlib.sha256()
    copied = 0
    with writing(target):  # a full disk says which file and how much room is left
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o750)
        out = os.open(
            target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o640
        )
        try:
            while copied < size:
                block = os.read(fd, min(COPY_BLOCK, size - copied))
                if not block:
                    break  # shrank since its fstat: keep what was there
                digest.update(block)
                view = memoryview(block)
                while view:
                    view = view[os.write(out, view) :]
                copied += len(block)
        finally:
            os.close(out)
    return Copied(path=rel, size=copied, sha256=digest.hexdigest())
