"""Translate a tree with the real hipify-perl; tar it up and diff it.

hipify-perl's ``-inplace`` is the only way to translate many files in one
process (without it, several inputs' outputs are concatenated on stdout), but
it backs files up with ``system("cp $fileName $file_prehip")``: a shell
command built from the file name, which a hostile upload could exploit
(``$(...).cu``). So the files are staged under safe generated names
(``f000001.cu``), translated in place there in batches (in parallel), and
copied back to their real paths in the output tree.
"""

from __future__ import annotations

import difflib
import gzip
import io
import os
import shutil
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from stack.hipify.examine import batches_by_size, run_batches, run_script, usable_cpus
from stack.hipify.tables import find_hipify_perl

STAGING = ".rocpath-hipify-staging"


@dataclass
class ConvertRun:
    """What a conversion did."""

    changed: list[str]
    calls: int
    stderr: str
    failures: list[str] = field(default_factory=list)


def copy_tree(src: Path, dest: Path) -> None:
    """Copy regular files and folders only: symbolic links are dropped, not followed."""
    for dirpath, dirnames, filenames in os.walk(src, followlinks=False):
        rel = Path(dirpath).relative_to(src)
        dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))]
        (dest / rel).mkdir(parents=True, exist_ok=True)
        for name in filenames:
            full = os.path.join(dirpath, name)
            if os.path.islink(full) or not os.path.isfile(full):
                continue
            shutil.copyfile(full, dest / rel / name)


def _run_inplace(script: str, names: Sequence[str], cwd: Path, timeout: float) -> tuple[int, str]:
    return run_script([script, "-inplace", "-quiet-warnings", "--", *names], cwd, timeout)


def hipify_tree(
    src: Path,
    dest: Path,
    files: Sequence[str],
    *,
    script: str | None = None,
    jobs: int | None = None,
    timeout: float = 3600.0,
) -> ConvertRun:
    """Copy ``src`` to ``dest`` and translate ``files`` there with hipify-perl.

    ``files`` are relative paths of regular files of ``src`` (as collect_files
    gives): the copy already holds them, so only the translated ones that
    changed are written again, and a file the tool failed on stays as it was.
    Raises ToolMissing when hipify-perl is absent.
    """
    tool = find_hipify_perl(script)
    copy_tree(src, dest)
    staging = dest / STAGING
    staging.mkdir()
    names = {}
    for i, rel in enumerate(files):
        ext = os.path.splitext(rel)[1].lower()
        safe = f"f{i:06d}{ext if ext.replace('.', '').isalnum() else ''}"
        shutil.copyfile(src / rel, staging / safe)
        names[safe] = rel
    jobs = jobs or usable_cpus()
    batches = batches_by_size(list(names), str(staging), jobs)
    results = run_batches(lambda b: _run_inplace(tool, b, staging, timeout), batches, jobs)
    failures = []
    changed = []
    # A batch that exited non-zero may have left files truncated (the tool opens its
    # output before translating): none of its files is trusted.
    failed_batch = {
        safe for batch, (rc, _) in zip(batches, results, strict=True) if rc != 0 for safe in batch
    }
    for safe, rel in names.items():
        if safe in failed_batch or not (staging / f"{safe}.prehip").exists():
            failures.append(rel)
            continue
        data = (staging / safe).read_bytes()
        if data != (src / rel).read_bytes():
            changed.append(rel)
            (dest / rel).write_bytes(data)
    shutil.rmtree(staging)
    stderr = "".join(err for _, err in results)
    return ConvertRun(sorted(changed), len(batches), stderr, sorted(failures))


def _diff_lines(text: str) -> list[str]:
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1] + "\n\\ No newline at end of file\n")
    return lines


def unified_diff(src: Path, dest: Path, files: Sequence[str]) -> str:
    """A git-style unified diff of ``files`` between the two trees (bytes as Latin-1)."""
    chunks = []
    for rel in sorted(files):
        a = (src / rel).read_bytes().decode("latin-1")
        b = (dest / rel).read_bytes().decode("latin-1")
        if a == b:
            continue
        chunks.append(f"diff --git a/{rel} b/{rel}\n")
        chunks.extend(
            difflib.unified_diff(_diff_lines(a), _diff_lines(b), f"a/{rel}", f"b/{rel}", n=3)
        )
    return "".join(chunks)


def diff_stats(diff: str) -> tuple[int, int]:
    """(lines added, lines removed) of a unified diff."""
    added = removed = 0
    for line in diff.split("\n"):
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed


def tar_tree(root: Path, prefix: str = "hipified") -> bytes:
    """A reproducible .tar.gz of a tree (sorted, mtime 0, root-owned, 0644/0755)."""
    buffer = io.BytesIO()
    with (
        gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0) as gz,
        tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            dirnames.sort()
            rel_dir = Path(dirpath).relative_to(root)
            for name in sorted(filenames):
                full = Path(dirpath) / name
                if full.is_symlink() or not full.is_file():
                    continue
                data = full.read_bytes()
                info = tarfile.TarInfo(f"{prefix}/{(rel_dir / name).as_posix()}")
                info.size = len(data)
                info.mode = 0o644
                info.mtime = 0
                tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def extract_tar_safely(archive: Path, dest: Path, prefix: str = "hipified") -> Path:
    """Extract a hipified.tar.gz of regular files only; refuse links and paths that escape.

    Returns the folder holding the tree (``dest/prefix`` when every member is
    under ``prefix/``, else ``dest``).
    """
    dest.mkdir(parents=True, exist_ok=True)
    root = dest.resolve()
    with tarfile.open(archive, "r:*") as tar:
        for member in tar.getmembers():
            if member.isdir():
                continue
            if not member.isfile():
                raise ValueError(f"{archive.name}: member {member.name!r} is not a regular file")
            target = (root / member.name).resolve()
            if root not in target.parents:
                raise ValueError(f"{archive.name}: member {member.name!r} leaves the folder")
            target.parent.mkdir(parents=True, exist_ok=True)
            source = tar.extractfile(member)
            if source is None:
                continue
            with open(target, "wb") as f:
                shutil.copyfileobj(source, f)
    inner = dest / prefix
    return inner if inner.is_dir() else dest
