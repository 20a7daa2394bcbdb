"""Bringing a team's code in: uploaded archives and git clones, safely.

An archive is checked member by member before anything is written: no path may
leave the target (absolute paths, ``..``, symlinks or hard links pointing out),
no device files, and limits on total size, file count and compression ratio
stop zip bombs. Extraction goes to a temporary folder that is renamed into place
only when everything succeeded, so a rejected archive leaves nothing behind.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any

from django.conf import settings
from django.db import transaction

from portal.models import AdoptionProject, SourceSnapshot


class SourceError(Exception):
    """The archive or repository was refused; the message names the offending member."""


@dataclass(frozen=True)
class Limits:
    max_bytes: int
    max_files: int
    max_ratio: float

    @classmethod
    def from_settings(cls) -> Limits:
        return cls(
            max_bytes=settings.ROCPATH_SOURCE_MAX_BYTES,
            max_files=settings.ROCPATH_SOURCE_MAX_FILES,
            max_ratio=settings.ROCPATH_SOURCE_MAX_RATIO,
        )


def snapshot_dir(snapshot_id: int) -> Path:
    return Path(settings.ARTIFACT_ROOT) / "sources" / str(snapshot_id)


def tree_of(snapshot: SourceSnapshot) -> Path:
    return snapshot_dir(snapshot.pk) / "tree"


def _safe_name(name: str) -> PurePosixPath:
    path = PurePosixPath(name.replace("\\\\", "/"))
    if path.is_absolute() or name.startswith(("/", "\\\\")) or (len(name) > 1 and name[1] == ":"):
        raise SourceError(f"{name!r}: absolute path")
    if ".." in path.parts:
        raise SourceError(f"{name!r}: path leaves the archive (..)")
    return path


def _inside(base: PurePosixPath, target: str) -> bool:
    """Whether a link at ``base`` pointing to ``target`` stays inside the tree."""
    if target.startswith("/"):
        return False
    depth = 0
    for part in (base.parent / target).parts:
        if part == "..":
            depth -= 1
            if depth < 0:
                return False
        elif part not in ("", "."):
            depth += 1
    return True


def _check_totals(name: str, files: int, total: int, compressed: int, limits: Limits) -> None:
    if files > limits.max_files:
        raise SourceError(f"{name!r}: more than {limits.max_files} files")
    if total > limits.max_bytes:
        raise SourceError(f"{name!r}: the archive unpacks to more than {limits.max_bytes} bytes")
    if compressed and total > 1 << 20 and total / compressed > limits.max_ratio:
        raise SourceError(f"{name!r}: compression ratio above {limits.max_ratio:g} (a zip bomb?)")


def _tar_members(
    archive: tarfile.TarFile, compressed: int, limits: Limits
) -> list[tarfile.TarInfo]:
    members, total, files = [], 0, 0
    for member in archive:
        path = _safe_name(member.name)
        if member.issym():
            if not _inside(path, member.linkname):
                raise SourceError(f"{member.name!r}: symlink points outside ({member.linkname})")
        elif member.islnk():
            _safe_name(member.linkname)
        elif not (member.isfile() or member.isdir()):
            raise SourceError(f"{member.name!r}: special file (device, fifo) not allowed")
        if member.isfile():
            files += 1
            total += member.size
        _check_totals(member.name, files, total, compressed, limits)
        members.append(member)
    return members


def _zip_members(
    archive: zipfile.ZipFile, compressed: int, limits: Limits
) -> list[zipfile.ZipInfo]:
    members, total, files = [], 0, 0
    for info in archive.infolist():
        path = _safe_name(info.filename)
        mode = info.external_attr >> 16
        if stat.S_ISLNK(mode):
            target = archive.read(info).decode("utf-8", "replace")
            if not _inside(path, target):
                raise SourceError(f"{info.filename!r}: symlink points outside ({target})")
        if not info.is_dir():
            files += 1
            total += info.file_size
            if (
                info.compress_size
                and info.file_size / max(info.compress_size, 1) > limits.max_ratio
                and info.file_size > 1 << 20
            ):
                raise SourceError(
                    f"{info.filename!r}: compression ratio above {limits.max_ratio:g} (a zip bomb?)"
                )
        _check_totals(info.filename, files, total, compressed, limits)
        members.append(info)
    return members


def extract_archive(
    fileobj: IO[bytes], filename: str, target: Path, limits: Limits
) -> dict[str, Any]:
    """Extract into ``target`` (which must not exist); all or nothing."""
    data_path = Path(tempfile.mkstemp(prefix="rocpath-upload-")[1])
    digest = hashlib.sha256()
    try:
        with data_path.open("wb") as handle:
            for block in iter(lambda: fileobj.read(1 << 20), b""):
                digest.update(block)
                handle.write(block)
        compressed = data_path.stat().st_size
        staging = Path(tempfile.mkdtemp(prefix=".extract-", dir=target.parent))
        try:
            lower = filename.lower()
            if lower.endswith((".tar.gz", ".tgz", ".tar", ".tar.bz2", ".tar.xz")):
                files, total = _extract_tar(data_path, staging, compressed, limits)
            elif lower.endswith(".zip"):
                files, total = _extract_zip(data_path, staging, compressed, limits)
            else:
                raise SourceError(f"{filename!r}: not a .tar.gz, .tgz or .zip archive")
            # mkdtemp made it private; job containers run as another user and must read it.
            staging.chmod(0o755)
            staging.rename(target)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    finally:
        data_path.unlink(missing_ok=True)
    return {"file_count": files, "total_bytes": total, "archive_sha256": digest.hexdigest()}


def _extract_tar(path: Path, staging: Path, compressed: int, limits: Limits) -> tuple[int, int]:
    try:
        with tarfile.open(path) as archive:
            members = _tar_members(archive, compressed, limits)
            # The stdlib's "data" filter re-checks every member as it is written.
            archive.extractall(staging, members=members, filter="data")
    except (tarfile.TarError, EOFError, OSError) as exc:
        if isinstance(exc, tarfile.FilterError):
            raise SourceError(f"{exc.tarinfo.name!r}: {exc}") from exc
        raise SourceError(f"not a readable tar archive: {exc}") from exc
    return _count(staging)


def _extract_zip(path: Path, staging: Path, compressed: int, limits: Limits) -> tuple[int, int]:
    try:
        with zipfile.ZipFile(path) as archive:
            members = _zip_members(archive, compressed, limits)
            written = 0
            for info in members:
                destination = staging / _safe_name(info.filename)
                if info.is_dir():
                    destination.mkdir(parents=True, exist_ok=True)
                    continue
                destination.parent.mkdir(parents=True, exist_ok=True)
                if stat.S_ISLNK(info.external_attr >> 16):
                    os.symlink(archive.read(info).decode(), destination)
                    continue
                with archive.open(info) as src, destination.open("wb") as dst:
                    # Count what really comes out, not what the header claims.
                    for block in iter(lambda src=src: src.read(1 << 20), b""):
                        written += len(block)
                        if written > limits.max_bytes:
                            raise SourceError(
                                f"{info.filename!r}: the archive unpacks to more than "
                                f"{limits.max_bytes} bytes"
                            )
                        dst.write(block)
    except (zipfile.BadZipFile, OSError, RuntimeError, UnicodeDecodeError) as exc:
        raise SourceError(f"not a readable zip archive: {exc}") from exc
    return _count(staging)


def _count(root: Path) -> tuple[int, int]:
    files = total = 0
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            files += 1
            total += path.stat().st_size
    return files, total


def add_upload(
    project: AdoptionProject, fileobj: IO[bytes], filename: str, user: Any, size: int | None = None
) -> SourceSnapshot:
    """Store an uploaded archive as the project's newest source; SourceError leaves nothing."""
    if size is not None and size > settings.ROCPATH_UPLOAD_MAX_BYTES:
        raise SourceError(f"{filename!r}: larger than {settings.ROCPATH_UPLOAD_MAX_BYTES} bytes")
    with transaction.atomic():
        snapshot = SourceSnapshot.objects.create(
            project=project,
            origin=SourceSnapshot.Origin.UPLOAD,
            name=filename[:300],
            created_by=user,
        )
        base = snapshot_dir(snapshot.pk)
        base.mkdir(parents=True, exist_ok=True)
        try:
            facts = extract_archive(fileobj, filename, base / "tree", Limits.from_settings())
        except BaseException:
            shutil.rmtree(base, ignore_errors=True)
            raise  # the transaction rolls the row back
        SourceSnapshot.objects.filter(pk=snapshot.pk).update(
            status=SourceSnapshot.Status.READY, **facts
        )
    snapshot.refresh_from_db()
    return snapshot


def git_url_allowed(url: str) -> str | None:
    """None when the URL may be cloned, else the reason it may not."""
    if url.startswith(("https://", "http://", "ssh://", "git@")):
        return None
    local = url.removeprefix("file://")
    if url.startswith(("file://", "/")):
        resolved = os.path.realpath(local)
        for prefix in settings.ROCPATH_GIT_LOCAL_ALLOW:
            if resolved == prefix.rstrip("/") or resolved.startswith(prefix.rstrip("/") + "/"):
                return None
        return "local paths and file:// URLs are only allowed under ROCPATH_GIT_LOCAL_ALLOW"
    return "use an https://, ssh:// or git@ URL"


def add_git(project: AdoptionProject, url: str, ref: str, user: Any) -> SourceSnapshot:
    """Record a git source; a worker clones it (jobs.tasks.fetch_git_source) after commit."""
    if reason := git_url_allowed(url):
        raise SourceError(f"{url!r}: {reason}")
    from jobs.tasks import fetch_git_source

    with transaction.atomic():
        snapshot = SourceSnapshot.objects.create(
            project=project,
            origin=SourceSnapshot.Origin.GIT,
            name=url[:300],
            ref=ref[:200],
            created_by=user,
        )
        transaction.on_commit(lambda: fetch_git_source.delay(snapshot.pk))
    return snapshot


def clone(snapshot: SourceSnapshot) -> None:
    """Clone the snapshot's repository into its tree (on a worker: it may take a while)."""
    if reason := git_url_allowed(snapshot.name):
        _fail(snapshot, reason)
        return
    base = snapshot_dir(snapshot.pk)
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    staging = base / ".clone"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "GIT_TERMINAL_PROMPT": "0",
        "HOME": str(base),
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    # "protocol.file.allow" lets the allowlisted local paths through; nothing else changes.
    argv = [
        "git",
        "-c",
        "protocol.file.allow=always",
        "clone",
        "--quiet",
        "--no-tags",
        "--depth",
        "1",
    ]
    if snapshot.ref:
        argv += ["--branch", snapshot.ref]
    argv += ["--", snapshot.name, str(staging)]
    try:
        done = subprocess.run(
            argv,
            env=env,
            capture_output=True,
            text=True,
            timeout=settings.ROCPATH_GIT_TIMEOUT_S,
            check=False,
        )
        if done.returncode != 0:
            raise SourceError(f"git clone failed: {done.stderr.strip()[-2000:]}")
        commit = subprocess.run(
            ["git", "-C", str(staging), "rev-parse", "HEAD"],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        shutil.rmtree(staging / ".git")
        files, total = _count(staging)
        limits = Limits.from_settings()
        if files > limits.max_files or total > limits.max_bytes:
            raise SourceError(f"the repository is over the limits ({files} files, {total} bytes)")
        staging.rename(base / "tree")
    except (SourceError, subprocess.TimeoutExpired, OSError) as exc:
        shutil.rmtree(base, ignore_errors=True)
        message = (
            f"git clone timed out after {settings.ROCPATH_GIT_TIMEOUT_S} s"
            if isinstance(exc, subprocess.TimeoutExpired)
            else str(exc)
        )
        _fail(snapshot, message)
        return
    SourceSnapshot.objects.filter(pk=snapshot.pk).update(
        status=SourceSnapshot.Status.READY, commit=commit[:64], file_count=files, total_bytes=total
    )


def _fail(snapshot: SourceSnapshot, message: str) -> None:
    SourceSnapshot.objects.filter(pk=snapshot.pk).update(
        status=SourceSnapshot.Status.FAILED, error=message[:5000]
    )


def newest_ready(project: AdoptionProject) -> SourceSnapshot | None:
    return project.sources.filter(status=SourceSnapshot.Status.READY).first()
