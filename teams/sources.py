"""Bringing a team's code in: uploaded archives and git clones, on a worker.

The web request does only what is cheap and refuses early: the archive's type and
size, the team's quota, and the member list (``teams.archives.survey``: names, types,
links, declared sizes; nothing is written). It stores the upload in the snapshot's
folder and creates the snapshot pending ("extracting…"); after commit a worker task
(``teams.extract_source``) checks everything again and writes the tree, by
construction unable to leave it (``teams.archives.materialise``). Git sources are
checked against the intake policy (``teams.gitintake``) when added and again on the
worker before the clone (``teams.fetch_git_source``).

Whatever fails leaves nothing behind: staging lives in ``.upload-*``, ``.extract-*``
and ``.clone*`` entries that a periodic task (``teams.reap_source_staging``) removes
once no process can still own them, such as after a killed worker.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import shutil
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from config.celery import queue_task
from stack.hipify.scan import CUDA_EXTENSIONS, SKIP_DIRS
from teams import archives, gitintake
from teams.archives import Limits, SourceError
from teams.models import AdoptionProject, SourceSnapshot, Team

__all__ = [
    "Limits",
    "SourceError",
    "TooManyUploads",
    "add_git",
    "add_upload",
    "clone",
    "extract_upload",
]

logger = logging.getLogger(__name__)

# The archive types we take, by name: the suffix picks the reader.
ARCHIVE_FORMATS = {
    ".tar.gz": "tar",
    ".tgz": "tar",
    ".tar": "tar",
    ".tar.bz2": "tar",
    ".tar.xz": "tar",
    ".zip": "zip",
}
ARCHIVE_FILE = {"tar": "archive.tar", "zip": "archive.zip"}  # in the snapshot's folder
STAGING_PREFIXES = (".upload-", ".extract-", ".clone")
EXTRACT_TASK = "teams.extract_source"  # teams/tasks.py
CLONE_TASK = "teams.fetch_git_source"


def sources_root() -> Path:
    return Path(settings.ARTIFACT_ROOT) / "sources"


def snapshot_dir(snapshot_id: int) -> Path:
    return sources_root() / str(snapshot_id)


def tree_of(snapshot: SourceSnapshot) -> Path:
    return snapshot_dir(snapshot.pk) / "tree"


# --- quotas -----------------------------------------------------------------------
def team_limits(team_id: int, exclude: int | None = None) -> Limits:
    """What one more source of the team may hold: the per-source limits, or what is left
    of the team's own, whichever is smaller. Sources that failed hold nothing."""
    used = (
        SourceSnapshot.objects.filter(project__team_id=team_id)
        .exclude(status=SourceSnapshot.Status.FAILED)
        .exclude(pk=exclude)
        .aggregate(bytes=Sum("total_bytes"), files=Sum("file_count"))
    )
    left_bytes = settings.ROCPATH_TEAM_SOURCE_MAX_BYTES - (used["bytes"] or 0)
    left_files = settings.ROCPATH_TEAM_SOURCE_MAX_FILES - (used["files"] or 0)
    team_bound = (
        left_bytes < settings.ROCPATH_SOURCE_MAX_BYTES
        or left_files < settings.ROCPATH_SOURCE_MAX_FILES
    )
    return Limits(
        max_bytes=max(0, min(settings.ROCPATH_SOURCE_MAX_BYTES, left_bytes)),
        max_files=max(0, min(settings.ROCPATH_SOURCE_MAX_FILES, left_files)),
        max_ratio=settings.ROCPATH_SOURCE_MAX_RATIO,
        note=" (what is left of the team's quota)" if team_bound else "",
    )


def _check_source_count(team_id: int) -> None:
    count = (
        SourceSnapshot.objects.filter(project__team_id=team_id)
        .exclude(status=SourceSnapshot.Status.FAILED)
        .count()
    )
    if count >= settings.ROCPATH_TEAM_SOURCES_MAX:
        raise SourceError(
            f"the team already has {count} sources, its limit (ROCPATH_TEAM_SOURCES_MAX)"
        )


# --- uploads ----------------------------------------------------------------------
class TooManyUploads(SourceError):
    """The user has ROCPATH_UPLOADS_PER_USER uploads in web requests already (a 429)."""


@contextlib.contextmanager
def upload_slot(user_id: int) -> Iterator[None]:
    """Hold one of the user's ROCPATH_UPLOADS_PER_USER upload slots while a web request
    receives and surveys an archive: eight uploads of one user at once held every web
    thread. A slot is a lock file held with flock, so every web process of the host
    counts, and a process killed mid-upload frees its slot with its descriptor."""
    folder = Path(settings.ARTIFACT_ROOT) / "upload-slots"
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(settings.ROCPATH_UPLOADS_PER_USER):
        fd = os.open(folder / f"{user_id}-{number}", os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        try:
            yield
        finally:
            os.close(fd)  # the lock goes with it
        return
    raise TooManyUploads(
        f"you have {settings.ROCPATH_UPLOADS_PER_USER} uploads being checked already "
        "(ROCPATH_UPLOADS_PER_USER): send this one when one of them is done"
    )


def archive_format(filename: str) -> str:
    lower = filename.lower()
    for suffix, fmt in ARCHIVE_FORMATS.items():
        if lower.endswith(suffix):
            return fmt
    raise SourceError(f"{filename!r}: not a .tar.gz, .tgz, .tar(.bz2|.xz) or .zip archive")


def add_upload(
    project: AdoptionProject,
    fileobj: IO[bytes],
    filename: str,
    user: Any,
    size: int | None = None,
    lineage: str = "",
) -> SourceSnapshot:
    """Check an uploaded archive's member list and queue its extraction; SourceError leaves
    nothing (no row, no file). ``lineage``: which code it is a version of (blank: derived
    from the name, SourceSnapshot.lineage_key)."""
    fmt = archive_format(filename)
    cap = settings.ROCPATH_UPLOAD_MAX_BYTES
    if size is not None and size > cap:
        raise SourceError(f"{filename!r}: larger than {cap} bytes")
    _check_source_count(project.team_id)
    with upload_slot(user.pk):
        return _add_upload(project, fileobj, filename, user, fmt, cap, lineage)


def _add_upload(
    project: AdoptionProject,
    fileobj: IO[bytes],
    filename: str,
    user: Any,
    fmt: str,
    cap: int,
    lineage: str,
) -> SourceSnapshot:
    root = sources_root()
    root.mkdir(parents=True, exist_ok=True)
    incoming = root / f".upload-{os.urandom(8).hex()}"
    base: Path | None = None
    try:
        digest = _receive(fileobj, incoming, filename, cap)
        limits = team_limits(project.team_id)
        plan = archives.survey(incoming, fmt, limits, budget=settings.ROCPATH_UPLOAD_SURVEY_MEMBERS)
        if plan.complete:  # else the worker reads the rest, and refuses it there
            require_cuda_relevant(_plan_files(plan), filename)
        with transaction.atomic():
            # One upload of a team at a time past this point, so two cannot share a quota.
            Team.objects.select_for_update().filter(pk=project.team_id).first()
            _check_source_count(project.team_id)
            limits = team_limits(project.team_id)
            archives.check_bytes(filename, plan.declared_bytes, 0, limits)
            if plan.files > limits.max_files:
                raise SourceError(f"{filename!r}: more than {limits.max_files} files{limits.note}")
            snapshot = SourceSnapshot.objects.create(
                project=project,
                origin=SourceSnapshot.Origin.UPLOAD,
                name=filename[:300],
                lineage=check_lineage(lineage),
                created_by=user,
                archive_sha256=digest,
                file_count=plan.files,
                total_bytes=plan.declared_bytes,
            )
            base = snapshot_dir(snapshot.pk)
            base.mkdir()
            incoming.rename(base / ARCHIVE_FILE[fmt])
            _queue(EXTRACT_TASK, snapshot.pk)
    except BaseException:
        incoming.unlink(missing_ok=True)
        if base is not None:
            shutil.rmtree(base, ignore_errors=True)
        raise  # the transaction rolls the row back
    return snapshot


def check_lineage(lineage: str) -> str:
    """A lineage a team typed: trimmed, printable, at most 200 characters."""
    text = (lineage or "").strip()
    if len(text) > 200:
        raise SourceError("lineage: longer than 200 characters")
    if any(not ch.isprintable() for ch in text):
        raise SourceError("lineage: only printable characters")
    return text


def cuda_relevant(path: str) -> bool:
    """Whether the scan would read this relative path (its extension, no VCS folder)."""
    parts = path.split("/")
    return path.lower().endswith(CUDA_EXTENSIONS) and not SKIP_DIRS.intersection(parts[:-1])


def require_cuda_relevant(paths: Any, what: str) -> None:
    """Refuse a tree in which the HIPIFY scan would read nothing.

    An empty or unrelated upload would otherwise be a ready source with 0 files, and
    its scan a report saying "0 unsupported": a burn-down that falls to 0 by accident.
    """
    if not any(cuda_relevant(p) for p in paths):
        raise SourceError(
            f"{what!r}: no CUDA-relevant file (none named {', '.join(CUDA_EXTENSIONS)} "
            "outside VCS folders): there would be nothing to assess or port"
        )


def _plan_files(plan: archives.Plan) -> Any:
    # Regular files and hard links (written as copies); the scan follows no symlink.
    return ("/".join(m.path) for m in plan.members if m.kind in (archives.FILE, archives.HARDLINK))


def _receive(fileobj: IO[bytes], path: Path, filename: str, cap: int) -> str:
    digest = hashlib.sha256()
    received = 0
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as handle:
        for block in iter(lambda: fileobj.read(1 << 20), b""):
            received += len(block)
            if received > cap:
                raise SourceError(f"{filename!r}: larger than {cap} bytes")
            digest.update(block)
            handle.write(block)
    return digest.hexdigest()


def extract_upload(snapshot_id: int) -> None:
    """Extract a pending upload into its tree (the worker task's body): ready, or failed
    with the refusal; the stored archive is removed either way."""
    snapshot = SourceSnapshot.objects.select_related("project").filter(pk=snapshot_id).first()
    if snapshot is None or snapshot.status != SourceSnapshot.Status.PENDING:
        return
    base = snapshot_dir(snapshot.pk)
    # The stored file's name says its format (the snapshot's name may be cut at 300).
    fmt = "zip" if (base / ARCHIVE_FILE["zip"]).is_file() else "tar"
    archive = base / ARCHIVE_FILE[fmt]
    # A redelivered task (its worker was killed) starts again from the archive.
    _remove_staging(base, max_age=None)
    shutil.rmtree(base / "tree", ignore_errors=True)
    try:
        if not archive.is_file():
            raise SourceError("the uploaded archive is gone (was the worker restarted?)")
        limits = team_limits(snapshot.project.team_id, exclude=snapshot.pk)
        plan = archives.survey(archive, fmt, limits)
        require_cuda_relevant(_plan_files(plan), snapshot.name)
        written = archives.materialise(archive, plan, base / "tree", limits)
    except Exception as exc:
        if not isinstance(exc, SourceError):
            logger.exception("extracting source %s failed", snapshot.pk)
        shutil.rmtree(base, ignore_errors=True)
        message = str(exc) if isinstance(exc, SourceError) else f"extraction failed: {exc}"
        _fail(snapshot.pk, message)
        return
    archive.unlink(missing_ok=True)
    done = SourceSnapshot.objects.filter(pk=snapshot.pk, status=SourceSnapshot.Status.PENDING)
    if not done.update(
        status=SourceSnapshot.Status.READY, file_count=written.files, total_bytes=written.bytes
    ):
        shutil.rmtree(base, ignore_errors=True)  # reaped meanwhile: its tree must not stay


# --- git --------------------------------------------------------------------------
def add_git(
    project: AdoptionProject, url: str, ref: str, user: Any, lineage: str = ""
) -> SourceSnapshot:
    """Record a git source; a worker clones it (teams.fetch_git_source) after commit."""
    lineage = check_lineage(lineage)
    gitintake.check_url(url, project.team.slug)
    gitintake.check_ref(ref)
    _check_source_count(project.team_id)
    with transaction.atomic():
        snapshot = SourceSnapshot.objects.create(
            project=project,
            origin=SourceSnapshot.Origin.GIT,
            name=url[:300],
            ref=ref[:200],
            lineage=lineage,
            created_by=user,
        )
        _queue(CLONE_TASK, snapshot.pk)
    return snapshot


def clone(snapshot: SourceSnapshot) -> None:
    """Clone the snapshot's repository into its tree (on a worker: it may take a while)."""
    base = snapshot_dir(snapshot.pk)
    shutil.rmtree(base, ignore_errors=True)
    try:
        team = Team.objects.get(projects=snapshot.project_id)
        # Checked again here: the policy or the host's DNS may have changed since.
        source = gitintake.check_url(snapshot.name, team.slug)
        gitintake.check_ref(snapshot.ref)
        limits = team_limits(team.pk, exclude=snapshot.pk)
        base.mkdir(parents=True)
        staging, home = base / ".clone", base / ".clone-home"
        home.mkdir(mode=0o700)
        gitintake.run_clone(source, snapshot.ref, staging, home, limits)
        commit = _head(staging / ".git")
        shutil.rmtree(staging / ".git")
        files, total = _count(staging, limits)
        require_cuda_relevant(_tree_files(staging), snapshot.name)
        shutil.rmtree(home)
        staging.chmod(0o755)
        staging.rename(base / "tree")
    except (SourceError, OSError) as exc:
        shutil.rmtree(base, ignore_errors=True)
        _fail(snapshot.pk, str(exc))
        return
    done = SourceSnapshot.objects.filter(pk=snapshot.pk, status=SourceSnapshot.Status.PENDING)
    if not done.update(
        status=SourceSnapshot.Status.READY, commit=commit, file_count=files, total_bytes=total
    ):
        shutil.rmtree(base, ignore_errors=True)


def _head(git_dir: Path) -> str:
    """The cloned commit, read from the files git wrote (no second git process)."""
    head = (git_dir / "HEAD").read_text().strip()
    if head.startswith("ref: "):
        ref = head[5:]
        loose = git_dir / ref
        if loose.is_file():
            return loose.read_text().strip()[:64]
        packed = git_dir / "packed-refs"
        for line in packed.read_text().splitlines() if packed.is_file() else []:
            if line.endswith(" " + ref):
                return line.split()[0][:64]
        return ""
    return head[:64]


def _tree_files(root: Path) -> Any:
    for folder, _dirs, names in os.walk(root):
        rel = os.path.relpath(folder, root)
        for name in names:
            yield name if rel == "." else f"{rel}/{name}"


def _count(root: Path, limits: Limits) -> tuple[int, int]:
    """Regular files and bytes of a checked-out tree; anything else (a link, a FIFO) is
    refused, though git with core.symlinks=false writes none."""
    files = total = 0
    folders = [root]
    while folders:
        with os.scandir(folders.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    folders.append(Path(entry.path))
                elif entry.is_file(follow_symlinks=False):
                    files += 1
                    total += entry.stat(follow_symlinks=False).st_size
                else:
                    shown = os.path.relpath(entry.path, root)
                    raise SourceError(f"{shown!r}: not a regular file or folder")
        if files > limits.max_files or total > limits.max_bytes:
            raise SourceError(
                f"the repository is over the limits ({limits.max_bytes} bytes, "
                f"{limits.max_files} files){limits.note}"
            )
    return files, total


# --- tasks, failures, reaping -----------------------------------------------------
BROKER_DOWN_NOTE = (
    "The job queue could not be reached: the source is kept and fetched once it is back."
)


def _queue(name: str, snapshot_id: int) -> None:
    """Queue a source task after commit. If the broker is unreachable the snapshot stays
    pending, marked as awaiting the broker, and send_unsent() sends it once it answers:
    a broker outage delays a source, as it does a job, and never fails it."""

    def unreachable(exc: Exception) -> None:
        SourceSnapshot.objects.filter(pk=snapshot_id, status=SourceSnapshot.Status.PENDING).update(
            awaiting_broker=True
        )

    queue_task(name, snapshot_id, on_error=unreachable)


def task_for(snapshot: SourceSnapshot) -> str:
    return EXTRACT_TASK if snapshot.origin == SourceSnapshot.Origin.UPLOAD else CLONE_TASK


def send_unsent() -> list[int]:
    """Send the tasks of the pending snapshots the broker could not take (the dispatcher
    calls this once the broker answers); the ids sent. Each is taken with a conditional
    UPDATE, so two dispatchers never send one twice; one the broker refuses again is
    marked again by _queue and waits for the next round."""
    sent = []
    waiting = SourceSnapshot.objects.filter(
        status=SourceSnapshot.Status.PENDING, awaiting_broker=True
    ).order_by("created_at")
    for snapshot in waiting:
        taken = SourceSnapshot.objects.filter(
            pk=snapshot.pk, status=SourceSnapshot.Status.PENDING, awaiting_broker=True
        ).update(awaiting_broker=False)
        if taken:
            _queue(task_for(snapshot), snapshot.pk)
            sent.append(snapshot.pk)
    return sent


def _fail(snapshot_id: int, message: str) -> None:
    SourceSnapshot.objects.filter(pk=snapshot_id, status=SourceSnapshot.Status.PENDING).update(
        status=SourceSnapshot.Status.FAILED, error=message[:5000]
    )


def _remove_staging(base: Path, max_age: float | None) -> list[Path]:
    removed = []
    now = time.time()
    for entry in base.iterdir() if base.is_dir() else []:
        if not entry.name.startswith(STAGING_PREFIXES):
            continue
        if max_age is not None and now - entry.lstat().st_mtime < max_age:
            continue
        _remove(entry)
        removed.append(entry)
    return removed


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def reap_staging() -> list[str]:
    """Remove what a killed process left: staging entries no live task can still own, the
    folders of snapshots that no longer exist, and pending snapshots older than the grace
    (failed, so the page says what happened)."""
    grace = settings.ROCPATH_SOURCE_STAGING_GRACE_S
    root = sources_root()
    removed: list[Path] = []
    cutoff = timezone.now() - timedelta(seconds=grace)
    lost = SourceSnapshot.objects.filter(
        status=SourceSnapshot.Status.PENDING, created_at__lt=cutoff
    )
    for pk, waited in lost.values_list("pk", "awaiting_broker"):
        if waited:
            _fail(pk, f"the job queue could not be reached for {grace} s")
        else:
            _fail(pk, f"still not extracted or cloned after {grace} s: the worker was lost")
    if not root.is_dir():
        return []
    removed += _remove_staging(root, max_age=grace)
    statuses = dict(SourceSnapshot.objects.values_list("pk", "status"))
    now = time.time()
    for entry in root.iterdir():
        if not entry.name.isdigit():
            continue
        status = statuses.get(int(entry.name))
        if status is None or status == SourceSnapshot.Status.FAILED:
            if now - entry.lstat().st_mtime >= grace or status is not None:
                _remove(entry)
                removed.append(entry)
        elif status == SourceSnapshot.Status.READY:
            removed += _remove_staging(entry, max_age=None)
        else:
            removed += _remove_staging(entry, max_age=grace)
    if removed:
        logger.info("reaped %d source staging entries", len(removed))
    return [str(path) for path in removed]


def current_lineage(project: AdoptionProject) -> str | None:
    """The lineage of the project's current code: the one an admin chose, else the first
    ready source's (a project is about the code it started with)."""
    if project.current_lineage:
        return project.current_lineage
    first = (
        project.sources.filter(status=SourceSnapshot.Status.READY).order_by("created_at", "id")
    ).first()
    return first.lineage_key if first else None


def _current(
    project: AdoptionProject,
) -> tuple[str | None, SourceSnapshot | None, list[SourceSnapshot]]:
    """The current lineage, its current code, and the newer sources of it held back: one
    in which a scan finds no CUDA reference, after sources in which one found some, waits
    for an admin's confirmation (a plain-C tree uploaded under the CUDA code's name)."""
    lineage = current_lineage(project)
    mine = [
        s
        for s in project.sources.filter(status=SourceSnapshot.Status.READY)  # newest first
        if s.lineage_key == lineage
    ]
    held = []
    for n, source in enumerate(mine):
        had_cuda = any((older.cuda_refs or 0) > 0 for older in mine[n + 1 :])
        if source.cuda_refs == 0 and had_cuda and project.confirmed_source_id != source.pk:
            held.append(source)
            continue
        return lineage, source, held
    return lineage, None, held


def newest_ready(project: AdoptionProject) -> SourceSnapshot | None:
    """The current code: the newest ready source of the current lineage. A newer upload of
    another lineage (a plain-C util.c beside a 627-file CUDA tree) is not it until an
    admin switches to it: it took the estimate from 1,370 h to 0 and the answer with it.
    Nor is a newer source of the lineage in which a scan finds no CUDA at all, until an
    admin confirms it."""
    return _current(project)[1]


def source_of(project: AdoptionProject, wanted: object) -> SourceSnapshot | None:
    """The project's source a request names by id (a form field or a JSON value), or None."""
    text = str(wanted)
    return (
        project.sources.filter(pk=int(text)).first() if text.isascii() and text.isdigit() else None
    )


class NotAdmin(SourceError):
    """The act is a team admin's (a 403)."""


def record_cuda_refs(source_id: int, refs: int) -> None:
    """What a succeeded scan of the source found (from jobs, when the scan ends)."""
    SourceSnapshot.objects.filter(pk=source_id).update(cuda_refs=max(0, int(refs)))


def current_code(project: AdoptionProject) -> dict[str, Any]:
    """What the project's current code is, and what an admin may make it instead: the
    newer sources of its lineage held back (a scan finds no CUDA in them), and the newest
    ready source of each other lineage newer than the current code."""
    lineage, source, held = _current(project)
    waiting = [(s, "a scan finds no CUDA in it") for s in held]
    seen = {lineage}
    for other in project.sources.filter(status=SourceSnapshot.Status.READY):
        if source is not None and other.created_at <= source.created_at:
            break
        if other.lineage_key not in seen:
            seen.add(other.lineage_key)
            waiting.append((other, "another lineage"))
    return {
        "lineage": lineage,
        "source": source.pk if source else None,
        "chosen_by": (
            project.current_lineage_by.get_username() if project.current_lineage_by else None
        ),
        "chosen_at": project.current_lineage_at,
        "waiting": [
            {"source": s.pk, "lineage": s.lineage_key, "name": s.name, "why": why}
            for s, why in waiting
        ],
    }


def switch_lineage(project: AdoptionProject, source: SourceSnapshot, user: Any) -> None:
    """Make ``source``'s lineage the current code, as a team admin; SourceError else."""
    from teams.access import is_admin

    if source.project_id != project.pk or source.status != SourceSnapshot.Status.READY:
        raise SourceError(f"source {source.pk} is not a ready source of this project")
    if not is_admin(user, project.team_id):
        raise NotAdmin("only an admin of the team switches the project's current code")
    AdoptionProject.objects.filter(pk=project.pk).update(
        current_lineage=source.lineage_key,
        current_lineage_by=user,
        current_lineage_at=timezone.now(),
        confirmed_source=source,
    )
    project.refresh_from_db()
