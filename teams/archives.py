"""Unpacking a team's archive so that nothing in it can write outside its tree, by construction.

Checking each member as text and then letting a library write the tree is what failed
before: a link checked alone can be chained through another link, and the library then
follows the links the archive itself created. Here the archive is never asked to write.

1. :func:`survey` reads only the member list into a virtual tree, refuses every name or
   type it does not fully understand, and resolves every symlink's whole chain inside
   that tree (links through links, ``..`` after a link as the kernel would take it).
   A link survives only when its final target is a regular file or a folder of the
   tree; a hard link must name a regular file of the tree and becomes a copy of it.
   Nothing touches the disk, so it is cheap enough to run in the web request too.
2. :func:`materialise` writes folders and regular files first, each opened relative to
   a folder descriptor it created (``dir_fd=``, ``O_NOFOLLOW``, ``O_EXCL``), so no path
   component can be a link; symlinks are made last, when nothing is written any more.
   Limits are counted on the bytes actually written, not on what headers claim.

Errors are :class:`SourceError` with the member's name quoted by ``repr`` (so a control
character shows as an escape, never as itself).

Over 400 lines: the two halves share the plan (members, resolved links, limits) and the
name rules, and only together are they the guarantee; split, a change to one would not
show what it relies on in the other.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import tarfile
import unicodedata
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from tarfile import nts as _nts
from typing import IO, Any

logger = logging.getLogger(__name__)

FILE, DIR, SYMLINK, HARDLINK = "file", "folder", "symlink", "hard link"
MAX_COMPONENT_BYTES = 255  # NAME_MAX on Linux
MAX_PATH_BYTES = 4000  # below PATH_MAX (4096), with room for the tree's own folder
MAX_LINK_HOPS = 40  # the kernel's own limit on symlinks in one lookup
MAX_ZIP_LINK_BYTES = 4096
RATIO_FLOOR = 1 << 20  # the compression ratio is judged only past 1 MiB unpacked
# Unicode categories refused in names: controls (NUL, newline, ESC), format characters
# (the bidi overrides U+202A-U+202E and isolates U+2066-U+2069, zero-width marks), line
# and paragraph separators, and lone surrogates (tarfile's stand-ins for bytes that are
# not UTF-8).
_REFUSED_CATEGORIES = {"Cc", "Cf", "Zl", "Zp", "Cs"}
_BLOCK = 1 << 20


class SourceError(Exception):
    """The archive or repository was refused; the message names the offending member."""


@dataclass(frozen=True)
class Limits:
    """What one archive may unpack to (the smaller of the per-source and team's remaining)."""

    max_bytes: int
    max_files: int
    max_ratio: float
    note: str = ""  # said after a limit that comes from the team's quota


@dataclass
class Member:
    path: tuple[str, ...]
    name: str  # as the archive spells it, for messages
    kind: str
    size: int = 0
    target: str = ""  # a symlink's text
    source: tuple[str, ...] = ()  # the regular file a hard link copies
    executable: bool = False
    ref: Any = None  # the TarInfo or ZipInfo to read data from


@dataclass
class Plan:
    """An archive's checked virtual tree: what :func:`materialise` will write, in order."""

    format: str
    members: list[Member] = field(default_factory=list)
    folders: set[tuple[str, ...]] = field(default_factory=set)
    files: int = 0
    declared_bytes: int = 0
    # False when a member budget stopped the survey (the web request's): only what was
    # read is checked, and the worker surveys the whole archive before writing anything.
    complete: bool = True


# --- names ------------------------------------------------------------------------
def check_text(name: str, text: str, what: str = "name") -> None:
    """Refuse text that no source tree needs and that hides what a name really is."""
    if "\x00" in text:
        raise SourceError(f"{name!r}: NUL in the {what}")
    for char in text:
        category = unicodedata.category(char)
        if category == "Cs":
            raise SourceError(f"{name!r}: the {what} is not valid UTF-8")
        if category in _REFUSED_CATEGORIES:
            raise SourceError(
                f"{name!r}: control or bidi character U+{ord(char):04X} in the {what}"
            )
    if "\\" in text:
        raise SourceError(f"{name!r}: backslash in the {what} (use / between folders)")
    if len(text.encode()) > MAX_PATH_BYTES:
        raise SourceError(f"{name!r}: the {what} is longer than {MAX_PATH_BYTES} bytes")


def member_path(name: str) -> tuple[str, ...]:
    """The parts of a member's name inside the tree; ``.`` and empty parts dropped."""
    check_text(name, name)
    if name.startswith("/") or (len(name) > 2 and name[1] == ":" and name[2] == "/"):
        raise SourceError(f"{name!r}: absolute path")
    parts = tuple(part for part in name.split("/") if part not in ("", "."))
    if ".." in parts:
        raise SourceError(f"{name!r}: path leaves the archive (..)")
    for part in parts:
        if len(part.encode()) > MAX_COMPONENT_BYTES:
            raise SourceError(f"{name!r}: a name part is longer than {MAX_COMPONENT_BYTES} bytes")
    return parts


# --- survey -----------------------------------------------------------------------
class _CheckedTarInfo(tarfile.TarInfo):
    """A TarInfo that notices what tarfile silently drops: bytes after a NUL in a name.

    tarfile cuts a header's name (and a GNU long name) at its first NUL; a name such as
    ``k.cu\\0.txt`` would be taken as ``k.cu``. The raw fields are looked at here.
    """

    nul_in_name = False

    @classmethod
    def frombuf(cls, buf: bytes, encoding: str, errors: str) -> _CheckedTarInfo:
        obj = super().frombuf(buf, encoding, errors)
        fields = [buf[0:100], buf[157:257]]
        if buf[257:263] == b"ustar\x00":  # POSIX ustar: a prefix field, not GNU's times
            fields.append(buf[345:500])
        obj.nul_in_name = any(_nul_inside(raw) for raw in fields)
        return obj

    def _proc_gnulong(self, archive: tarfile.TarFile) -> _CheckedTarInfo:
        # The stdlib's own steps, plus the NUL check on the long name's raw bytes.
        buf = archive.fileobj.read(self._block(self.size))
        try:
            following = self.fromtarfile(archive)
        except tarfile.HeaderError as exc:
            raise tarfile.SubsequentHeaderError(str(exc)) from None
        following.offset = self.offset
        text = _nts(buf, archive.encoding, archive.errors)
        if self.type == tarfile.GNUTYPE_LONGNAME:
            following.name = text
        elif self.type == tarfile.GNUTYPE_LONGLINK:
            following.linkname = text
        if following.isdir():
            following.name = following.name.removesuffix("/")
        following.nul_in_name = following.nul_in_name or _nul_inside(buf[: self.size])
        return following


def _nul_inside(raw: bytes) -> bool:
    """Whether a NUL-padded field holds bytes after its first NUL."""
    return b"\x00" in raw.rstrip(b"\x00")


_TAR_TYPES = {
    tarfile.REGTYPE: FILE,
    tarfile.AREGTYPE: FILE,
    tarfile.CONTTYPE: FILE,
    tarfile.DIRTYPE: DIR,
    tarfile.SYMTYPE: SYMLINK,
    tarfile.LNKTYPE: HARDLINK,
}
_TAR_SPECIAL = {
    tarfile.CHRTYPE: "character device",
    tarfile.BLKTYPE: "block device",
    tarfile.FIFOTYPE: "FIFO",
    tarfile.GNUTYPE_SPARSE: "sparse file",
}
_MODE_SPECIAL = {
    stat.S_IFCHR: "character device",
    stat.S_IFBLK: "block device",
    stat.S_IFIFO: "FIFO",
    stat.S_IFSOCK: "socket",
}


class _Tree:
    """The virtual tree the members describe, for checks that need all of them."""

    def __init__(self, plan: Plan, limits: Limits, compressed: int) -> None:
        self.plan = plan
        self.limits = limits
        self.compressed = compressed
        self.nodes: dict[tuple[str, ...], Member] = {}

    def add(self, member: Member) -> None:
        if not member.path:
            if member.kind == DIR:
                return  # "./": the tree itself
            raise SourceError(f"{member.name!r}: no name")
        known = self.nodes.get(member.path)
        if known is not None:
            if known.kind == DIR and member.kind == DIR:
                return
            raise SourceError(f"{member.name!r}: appears twice in the archive")
        self.nodes[member.path] = member
        self.plan.members.append(member)
        for depth in range(1, len(member.path)):
            self.plan.folders.add(member.path[:depth])
        if member.kind == DIR:
            self.plan.folders.add(member.path)
        else:
            self.plan.files += 1
            self.plan.declared_bytes += member.size
        self._check_totals(member)

    def _check_totals(self, member: Member) -> None:
        plan, limits = self.plan, self.limits
        if plan.files > limits.max_files or len(plan.folders) > limits.max_files:
            raise SourceError(f"{member.name!r}: more than {limits.max_files} files{limits.note}")
        check_bytes(member.name, plan.declared_bytes, self.compressed, limits)

    def finish(self) -> Plan:
        for member in self.plan.members:
            if member.kind != DIR and member.path in self.plan.folders:
                inside = next(
                    m
                    for m in self.plan.members
                    if m.path[: len(member.path)] == member.path and m is not member
                )
                raise SourceError(
                    f"{inside.name!r}: lies inside {member.name!r}, which is a {member.kind}"
                )
            for depth in range(1, len(member.path)):
                parent = self.nodes.get(member.path[:depth])
                if parent is not None and parent.kind != DIR:
                    raise SourceError(f"{member.name!r}: lies inside {parent.name!r}")
        for member in self.plan.members:
            if member.kind == SYMLINK:
                self._check_symlink(member)
            elif member.kind == HARDLINK:
                self._check_hardlink(member)
        return self.plan

    def resolve(self, start: tuple[str, ...], text: str, member: Member) -> tuple[str, ...]:
        """Where ``text`` (a link target, relative to ``start``) ends after every link."""
        resolved = list(start)
        pending = text.split("/")
        hops = 0
        while pending:
            part = pending.pop(0)
            if part in ("", "."):
                continue
            if part == "..":
                if not resolved:
                    raise SourceError(
                        f"{member.name!r}: symlink points outside the archive ({member.target})"
                    )
                resolved.pop()
                continue
            resolved.append(part)
            node = self.nodes.get(tuple(resolved))
            if node is not None and node.kind == SYMLINK:
                hops += 1
                if hops > MAX_LINK_HOPS:
                    raise SourceError(f"{member.name!r}: symlink chain too long (a loop?)")
                resolved.pop()
                if node.target.startswith("/"):
                    raise SourceError(
                        f"{member.name!r}: symlink points outside the archive ({member.target})"
                    )
                pending = node.target.split("/") + pending
        return tuple(resolved)

    def _check_symlink(self, member: Member) -> None:
        target = member.target
        if not target or target.startswith("/"):
            raise SourceError(f"{member.name!r}: symlink points outside the archive ({target})")
        final = self.resolve(member.path[:-1], target, member)
        node = self.nodes.get(final)
        if node is not None and node.kind in (FILE, HARDLINK):
            return
        if final == () or final in self.plan.folders:
            if member.path[: len(final)] == final:
                raise SourceError(
                    f"{member.name!r}: symlink points to a folder that holds it (a loop)"
                )
            return
        raise SourceError(
            f"{member.name!r}: symlink target {target!r} is not a file or folder of the archive"
        )

    def _check_hardlink(self, member: Member) -> None:
        seen: set[tuple[str, ...]] = set()
        path = member.source
        while True:
            node = self.nodes.get(path)
            if node is None or node.kind not in (FILE, HARDLINK) or path in seen:
                raise SourceError(
                    f"{member.name!r}: hard link to {member.target!r}, "
                    "which is not a regular file of the archive"
                )
            if node.kind == FILE:
                member.source = path
                member.size = node.size
                return
            seen.add(path)
            path = node.source


def check_bytes(name: str, total: int, compressed: int, limits: Limits) -> None:
    if total > limits.max_bytes:
        raise SourceError(
            f"{name!r}: the archive unpacks to more than {limits.max_bytes} bytes{limits.note}"
        )
    if compressed and total > RATIO_FLOOR and total / compressed > limits.max_ratio:
        raise SourceError(f"{name!r}: compression ratio above {limits.max_ratio:g} (a zip bomb?)")


@contextmanager
def open_archive(path: Path, fmt: str) -> Iterator[Any]:
    """The archive opened for reading; a damaged one is a SourceError, not a 500."""
    try:
        if fmt == "zip":
            with zipfile.ZipFile(path) as archive:
                yield archive
        else:
            with tarfile.open(path, "r", tarinfo=_CheckedTarInfo) as archive:
                yield archive
    except SourceError:
        raise
    except UnicodeDecodeError as exc:
        raise SourceError(f"a member name is not valid UTF-8 ({exc.reason})") from exc
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:
        kind = "zip" if fmt == "zip" else "tar"
        raise SourceError(f"not a readable {kind} archive: {exc}") from exc
    except (RuntimeError, NotImplementedError) as exc:  # zip: encrypted, unknown method
        raise SourceError(f"not a readable zip archive: {exc}") from exc
    except Exception as exc:  # a reader's own bug on hostile input is still the input's fault
        logger.warning("archive reader failed on %s", path, exc_info=True)
        raise SourceError(f"not a readable archive ({type(exc).__name__})") from exc


def survey(path: Path, fmt: str, limits: Limits, budget: int | None = None) -> Plan:
    """Read and check the member list; write nothing. Raises SourceError naming the member.

    ``budget``: read at most this many members, then stop with ``complete=False`` (the
    web request's bound: a 0.7 MB tar.gz of 100,000 members held a thread 63 s).
    """
    compressed = path.stat().st_size
    plan = Plan(format=fmt)
    tree = _Tree(plan, limits, compressed)
    with open_archive(path, fmt) as archive:
        members = _zip_members(archive) if fmt == "zip" else _tar_members(archive)
        for count, member in enumerate(members):
            if budget is not None and count >= budget:
                plan.complete = False
                return plan
            tree.add(member)
    return tree.finish()


def _tar_members(archive: tarfile.TarFile) -> Iterator[Member]:
    for info in archive:
        name = info.name
        if getattr(info, "nul_in_name", False):
            raise SourceError(f"{name!r}: NUL in the name (the archive's name goes on after it)")
        if info.type in _TAR_SPECIAL:
            raise SourceError(f"{name!r}: special file ({_TAR_SPECIAL[info.type]}) not allowed")
        kind = _TAR_TYPES.get(info.type)
        if kind is None:
            raise SourceError(f"{name!r}: unknown tar member type {info.type!r}")
        path = member_path(name)
        member = Member(path=path, name=name, kind=kind, ref=info)
        if kind == FILE:
            member.size = info.size
            member.executable = bool(info.mode & 0o111)
        elif kind == SYMLINK:
            check_text(name, info.linkname, "link target")
            member.target = info.linkname
        elif kind == HARDLINK:
            member.target = info.linkname
            member.source = member_path(info.linkname)
        yield member


def _zip_name(info: zipfile.ZipInfo) -> str:
    """The member's name as UTF-8; zip's legacy cp437 names are taken as the bytes they are."""
    if "\x00" in info.orig_filename:
        raise SourceError(f"{info.orig_filename!r}: NUL in the name")
    name = info.orig_filename
    if not info.flag_bits & 0x800:
        raw = name.encode("cp437")
        try:
            name = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise SourceError(
                f"{raw.decode('utf-8', 'backslashreplace')!r}: the name is not valid UTF-8"
            ) from None
    return name


def _zip_members(archive: zipfile.ZipFile) -> Iterator[Member]:
    for info in archive.infolist():
        name = _zip_name(info)
        mode = info.external_attr >> 16
        kind_bits = stat.S_IFMT(mode)
        if kind_bits in _MODE_SPECIAL:
            raise SourceError(f"{name!r}: special file ({_MODE_SPECIAL[kind_bits]}) not allowed")
        if info.flag_bits & 0x1:
            raise SourceError(f"{name!r}: encrypted members are not supported")
        path = member_path(name)
        if kind_bits == stat.S_IFLNK:
            if info.file_size > MAX_ZIP_LINK_BYTES:
                raise SourceError(f"{name!r}: symlink target longer than {MAX_ZIP_LINK_BYTES}")
            try:
                target = archive.read(info).decode("utf-8")
            except UnicodeDecodeError:
                raise SourceError(f"{name!r}: the link target is not valid UTF-8") from None
            check_text(name, target, "link target")
            yield Member(path=path, name=name, kind=SYMLINK, target=target, ref=info)
        elif kind_bits == stat.S_IFDIR or info.filename.endswith("/"):
            yield Member(path=path, name=name, kind=DIR, ref=info)
        else:
            yield Member(
                path=path,
                name=name,
                kind=FILE,
                size=info.file_size,
                executable=bool(mode & 0o111),
                ref=info,
            )


# --- materialise ------------------------------------------------------------------
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class _Folders:
    """Descriptors of the folders being written, each opened from its parent's descriptor."""

    def __init__(self, root: Path) -> None:
        self.root = os.open(root, _DIR_FLAGS)
        self.last: tuple[tuple[str, ...], int] | None = None

    def open(self, parts: tuple[str, ...]) -> int:
        """The descriptor of folder ``parts`` (made when missing); valid until the next call."""
        if self.last is not None and self.last[0] == parts:
            return self.last[1]
        self._drop_last()
        fd = os.dup(self.root)
        try:
            for part in parts:
                with suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        self.last = (parts, fd)
        return fd

    def _drop_last(self) -> None:
        if self.last is not None:
            os.close(self.last[1])
            self.last = None

    def close(self) -> None:
        self._drop_last()
        os.close(self.root)


@dataclass
class Written:
    """What was really written: regular files (hard-link copies too), symlinks, bytes."""

    files: int = 0
    links: int = 0
    bytes: int = 0

    def count(self, member: Member, limits: Limits) -> None:
        if member.kind == SYMLINK:
            self.links += 1
        else:
            self.files += 1
        if self.files + self.links > limits.max_files:
            raise SourceError(f"{member.name!r}: more than {limits.max_files} files{limits.note}")


def materialise(path: Path, plan: Plan, target: Path, limits: Limits) -> Written:
    """Write the surveyed tree to ``target`` (which must not exist), all or nothing.

    The tree is built in a ``.extract-*`` folder beside the target and renamed into
    place at the end; a failure removes it, and a killed process leaves a folder the
    staging reaper recognises by its prefix.
    """
    staging = target.parent / f".extract-{os.urandom(6).hex()}"
    staging.mkdir(mode=0o700)
    compressed = path.stat().st_size
    written = Written()
    try:
        folders = _Folders(staging)
        try:
            with open_archive(path, plan.format) as archive:
                for parts in sorted(plan.folders):
                    try:
                        folders.open(parts)
                    except OSError as exc:
                        raise SourceError(
                            f"{'/'.join(parts)!r}: the folder cannot be made: {exc.strerror}"
                        ) from exc
                for member in plan.members:
                    if member.kind == FILE:
                        with _reader(archive, plan.format, member) as source:
                            _write(folders, member, source, written, limits, compressed)
                for member in plan.members:
                    if member.kind == HARDLINK:
                        _copy(folders, member, written, limits, compressed)
                for member in plan.members:
                    if member.kind == SYMLINK:
                        _symlink(folders, member, written, limits)
        finally:
            folders.close()
        staging.chmod(0o755)  # job containers run as another user and must read it
        staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return written


@contextmanager
def _reader(archive: Any, fmt: str, member: Member) -> Iterator[IO[bytes]]:
    try:
        if fmt == "zip":
            with archive.open(member.ref) as source:
                yield source
        else:
            source = archive.extractfile(member.ref)
            if source is None:
                raise SourceError(f"{member.name!r}: has no data")
            with source:
                yield source
    except SourceError:
        raise
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:
        raise SourceError(f"{member.name!r}: cannot be read: {exc}") from exc


def _new_file(folders: _Folders, member: Member) -> int:
    parent = folders.open(member.path[:-1])
    mode = 0o755 if member.executable else 0o644
    try:
        return os.open(member.path[-1], _NEW_FILE_FLAGS, mode, dir_fd=parent)
    except OSError as exc:
        raise SourceError(f"{member.name!r}: cannot be written: {exc.strerror}") from exc


def _write(
    folders: _Folders,
    member: Member,
    source: IO[bytes],
    written: Written,
    limits: Limits,
    compressed: int,
) -> None:
    written.count(member, limits)
    fd = _new_file(folders, member)
    with os.fdopen(fd, "wb") as out:
        try:
            while block := source.read(_BLOCK):
                written.bytes += len(block)
                check_bytes(member.name, written.bytes, compressed, limits)
                out.write(block)
        except SourceError:
            raise
        except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:
            raise SourceError(f"{member.name!r}: cannot be unpacked: {exc}") from exc


def _copy(
    folders: _Folders, member: Member, written: Written, limits: Limits, compressed: int
) -> None:
    parent = folders.open(member.source[:-1])
    try:
        fd = os.open(member.source[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    except OSError as exc:
        raise SourceError(f"{member.name!r}: cannot be copied: {exc.strerror}") from exc
    with os.fdopen(fd, "rb") as source:
        _write(folders, member, source, written, limits, compressed)


def _symlink(folders: _Folders, member: Member, written: Written, limits: Limits) -> None:
    written.count(member, limits)
    parent = folders.open(member.path[:-1])
    try:
        os.symlink(member.target, member.path[-1], dir_fd=parent)
    except OSError as exc:
        raise SourceError(f"{member.name!r}: cannot be written: {exc.strerror}") from exc
