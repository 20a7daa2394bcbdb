"""Scan a source tree: select the CUDA-relevant files, examine them (cached, sharded), sum up.

The per-file records this produces are the unit the portal stores and pages
through (one row per file); the totals, per-family counts, top lists and the
effort estimate are the job summary. docs/hipify.md describes the shapes.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from stack.hipify.lexer import SourceMap, line_bounds, line_starts
from stack.hipify.tables import Tables, load_tables
from stack.hipify.totals import RECORD_VERSION, Totals, aggregate, record_core

FINDINGS_SCHEMA = "rocpath.hipify-findings/1"
CUDA_EXTENSIONS = (
    ".cu",
    ".cuh",
    ".cpp",
    ".cc",
    ".cxx",
    ".c",
    ".h",
    ".hpp",
    ".hxx",
    ".hh",
    ".inl",
)
ENGINES = ("fast", "hipify-perl")
SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__"}
# Below this much to examine, starting worker processes costs more than it saves.
PARALLEL_MIN_BYTES = 256 * 1024

Progress = Callable[[float, str], None]


# --- selecting files ---------------------------------------------------------------


def glob_to_regex(pattern: str) -> re.Pattern[str]:
    """A path glob: ``*`` and ``?`` stay within a folder, ``**`` spans folders, ``[..]`` classes.

    A pattern without a slash matches the file name in any folder
    (``*.cuh``), as .gitignore does; with one it matches the whole relative path.
    """
    anchored = "/" in pattern.strip("/")
    pattern = pattern.strip("/")
    out = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif ch == "*":
            out.append("[^/]*")
            i += 1
        elif ch == "?":
            out.append("[^/]")
            i += 1
        elif ch == "[":
            j = pattern.find("]", i + 1)
            if j < 0:
                out.append(re.escape(ch))
                i += 1
            else:
                body = pattern[i + 1 : j]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = j + 1
        else:
            out.append(re.escape(ch))
            i += 1
    body = "".join(out)
    if anchored:
        return re.compile(f"{body}(?:/.*)?")
    return re.compile(f"(?:.*/)?{body}(?:/.*)?")


def collect_files(
    root: str | os.PathLike[str],
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    extensions: Sequence[str] = CUDA_EXTENSIONS,
    skipped: list[str] | None = None,
) -> list[str]:
    """Relative POSIX paths of the files to examine, sorted.

    A file qualifies by extension (case-insensitive), then must match an
    ``include`` glob when any are given and no ``exclude`` glob. Symbolic
    links are never followed nor examined (a tree is untrusted input), and VCS
    folders are skipped. So are names that are not valid UTF-8 (they could not be
    reported in JSON); they are appended to ``skipped`` when it is given.
    """
    root = os.fspath(root)
    inc = [glob_to_regex(p) for p in include]
    exc = [glob_to_regex(p) for p in exclude]
    exts = tuple(e.lower() for e in extensions)
    found: list[str] = []

    def walk(folder: str, prefix: str) -> None:
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as error:
            if folder == root:  # nothing can be scanned: say so instead of finding nothing
                raise
            if skipped is not None:
                skipped.append(f"{prefix or '.'} (unreadable: {error.strerror})")
            return
        for entry in entries:
            name = entry.name
            if entry.is_symlink():
                continue
            rel = prefix + name
            if entry.is_dir(follow_symlinks=False):
                if name not in SKIP_DIRS:
                    walk(entry.path, rel + "/")
                continue
            if not name.lower().endswith(exts) or not entry.is_file(follow_symlinks=False):
                continue
            try:
                rel.encode("utf-8")
            except UnicodeEncodeError:
                if skipped is not None:
                    skipped.append(
                        rel.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
                    )
                continue
            if inc and not any(rx.fullmatch(rel) for rx in inc):
                continue
            if any(rx.fullmatch(rel) for rx in exc):
                continue
            found.append(rel)

    walk(root, "")
    return sorted(found)


def read_file(root: str, rel: str) -> bytes:
    """A file's bytes (without pathlib: its objects cost more than the read for small files)."""
    with open(os.path.join(root, rel), "rb") as f:
        return f.read()


# --- examining ---------------------------------------------------------------------

_WORKER: dict[str, Any] = {}


def _worker_init(die_with_parent: Callable[[], None] | None) -> None:
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if die_with_parent is not None:
        die_with_parent()


def _examine_chunk(chunk: list[tuple[str, str]]) -> list[tuple[str, dict[str, Any]]]:
    from stack.hipify.fast import examine

    tables = _WORKER["tables"]
    root = _WORKER["root"]
    warnings = _WORKER["warnings"]
    out = []
    for rel, sha in chunk:
        data = read_file(root, rel)
        # the hazard rules in the same pass, on the same text (with warnings: a
        # conversion-only scan, hipify's -quiet-warnings, looks for nothing)
        out.append((sha, examine(data, tables, warnings=warnings, hazards=warnings)))
    return out


def examine_fast(
    root: str,
    items: list[tuple[str, str, int]],
    tables: Tables,
    *,
    jobs: int,
    warnings: bool = True,
    progress: Progress | None = None,
) -> dict[str, dict[str, Any]]:
    """Findings by sha256 for (relpath, sha256, size) items, sharded over ``jobs`` processes."""
    _WORKER.update(tables=tables, root=root, warnings=warnings)
    total_bytes = sum(size for _, _, size in items) or 1
    results: dict[str, dict[str, Any]] = {}
    done_bytes = 0
    if jobs <= 1 or total_bytes < PARALLEL_MIN_BYTES or len(items) < 4:
        for rel, sha, size in items:
            results.update(_examine_chunk([(rel, sha)]))
            done_bytes += size
            if progress is not None:
                progress(done_bytes / total_bytes, rel)
        return results
    import multiprocessing

    from stack.hipify.examine import balanced_groups
    from stack.hipify.fast import index_for
    from stack.tools import die_with_parent_preexec

    index_for(tables)  # build the lookup structures once, before the fork, for every worker
    # a file costs its bytes plus about 2 KiB's worth of fixed work
    chunks = balanced_groups(
        ((size + 2048, (rel, sha)) for rel, sha, size in items), min(len(items), jobs * 8)
    )
    sizes = {rel: size for rel, _, size in items}
    context = multiprocessing.get_context("fork")
    with context.Pool(
        jobs, initializer=_worker_init, initargs=(die_with_parent_preexec(),)
    ) as pool:
        for chunk, chunk_result in zip(chunks, pool.imap(_examine_chunk, chunks), strict=True):
            results.update(chunk_result)
            done_bytes += sum(sizes[rel] for rel, _ in chunk)
            if progress is not None:
                progress(done_bytes / total_bytes, chunk[-1][0])
    return results


def examine_with_hipify_perl(
    root: str,
    items: list[tuple[str, str, int]],
    tables: Tables,
    *,
    jobs: int,
    warnings: bool = True,
    progress: Progress | None = None,
) -> dict[str, dict[str, Any]]:
    """Findings by sha256 from the real tool's ``-examine`` output (the reference engine).

    The tool prints no columns; each warning's column is the first occurrence
    of its identifier on that line of the original file (for ``unconverted``,
    the token in the original line when it is there), and its context comes
    from that place.
    """
    from stack.hipify.examine import run_examine
    from stack.hipify.hazards import detect

    paths = [rel for rel, _, _ in items]
    if progress is not None:
        progress(0.0, f"hipify-perl -examine over {len(paths)} files")
    run = run_examine(paths, root, script=tables.script, jobs=jobs, quiet_warnings=not warnings)
    types = {s.cuda: s.type for s in tables.substs}
    results: dict[str, dict[str, Any]] = {}
    for rel, sha, _size in items:
        data = read_file(root, rel)
        results[sha] = findings_from_examined(run.output.files[rel], data, types)
        results[sha]["hazards"] = detect(data) if warnings else []
    if progress is not None:
        progress(1.0, f"hipify-perl: {run.calls} calls")
    return results


def findings_from_examined(examined: Any, data: bytes, types: dict[str, str]) -> dict[str, Any]:
    """The fast engine's findings shape, from one file's parsed hipify-perl output."""
    text = data.decode("latin-1")
    starts = line_starts(text)
    smap: SourceMap | None = None
    found = []
    for w in examined.warnings:
        line_no = w["line"]
        col = -1
        if 1 <= line_no <= len(starts):
            start, end = line_bounds(starts, line_no, len(text))
            col = text.find(w["identifier"], start, end)
            col = col - start if col >= 0 else -1
        if col >= 0:
            if smap is None:
                smap = SourceMap(text)
            context = smap.context(starts[line_no - 1] + col, len(w["identifier"]))
        else:
            source = w.get("source") or ""
            col = source.find(w["identifier"])
            context = SourceMap(source).context(col, len(w["identifier"])) if col >= 0 else "code"
        found.append([line_no, col, w["identifier"], w["kind"], w["since"], context])
    by_target: dict[str, int] = {}
    for _cuda, hip, _n in examined.refs:
        by_target[hip] = by_target.get(hip, 0) + 1
    refs = [
        [cuda, hip, types.get(cuda, ""), n] + ([True] if by_target[hip] > 1 else [])
        for cuda, hip, n in sorted(examined.refs)
    ]
    return {
        "loc": examined.loc if examined.loc is not None else data.count(b"\n"),
        "bytes": len(data),
        "converted_refs": examined.converted_refs or 0,
        "device_functions": None,  # not printed by the tool
        "warnings_count": examined.warnings_count or 0,
        "printed": examined.printed,
        "refs": refs,
        "warnings": found,
    }


# --- the whole scan ------------------------------------------------------------------


@dataclass
class ScanResult:
    """A scanned tree: per-file records (as JSON text), the summary, and how it went."""

    engine: str
    tables: Tables
    files: list[tuple[str, str, bool]]  # (path, sha256, has device code)
    cores: dict[str, str]  # sha256 -> record JSON without the path
    totals: Totals
    totals_from: str  # "summed" every file, "updated" the previous scan's, or "unchanged"
    summary: dict[str, Any]
    examined: int
    cached: int
    duplicates: int
    timings: dict[str, float] = field(default_factory=dict)
    vendored: dict[str, str] = field(default_factory=dict)  # path -> why it is vendored

    def rows(self) -> list[dict[str, Any]]:
        """Per-file counts without the warnings (for the report's file table)."""
        vendored = self.vendored
        rows = self.totals.rows(p for p, _, _ in self.files)
        for row in rows:
            row["vendored"] = vendored.get(row["path"])
        return rows

    @property
    def records(self) -> list[dict[str, Any]]:
        """The findings.json entries, parsed (costly for big trees: prefer findings_json)."""
        import json

        return [
            {
                "path": p,
                "sha256": sha,
                "device_code": dev,
                "vendored": self.vendored.get(p),
                **json.loads(self.cores[sha]),
            }
            for p, sha, dev in self.files
        ]

    def _header(self, extra: dict[str, Any] | None) -> dict[str, Any]:
        return {
            "schema": FINDINGS_SCHEMA,
            "engine": self.engine,
            "tool": self.tables.describe(),
            "files_examined": self.examined,
            "files_cached": self.cached,
            **(extra or {}),
            "totals": self.summary["totals"],
        }

    def findings_json(self, extra: dict[str, Any] | None = None) -> str:
        """findings.json as text, built from the cached record text without parsing it."""
        import json

        header = json.dumps(self._header(extra), separators=(",", ":"))
        parts = [header[:-1], ',"files":[']
        vendored = self.vendored
        for i, (path, sha, dev) in enumerate(self.files):
            if i:
                parts.append(",")
            parts.append(
                f'{{"path":{json.dumps(path)},"sha256":"{sha}",'
                f'"device_code":{"true" if dev else "false"},'
                f'"vendored":{json.dumps(vendored.get(path))},'
            )
            parts.append(self.cores[sha][1:])
        parts.append("]}")
        return "".join(parts)


def engine_key(engine: str, tables: Tables, warnings: bool = True) -> str:
    """The cache key part naming what produced a file's findings."""
    import sys

    from stack.hipify.fast import ENGINE_VERSION

    # marshal (the aggregates' format) may change between Python versions
    python = f"{sys.version_info[0]}.{sys.version_info[1]}"
    mode = "w" if warnings else "q"
    return f"{engine}:{ENGINE_VERSION}:{RECORD_VERSION}:py{python}:{tables.key}:{mode}"


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cycle collector (for a scan job's whole run), and resume it after.

    A scan builds many small objects (findings, aggregates, cache rows) that
    reference counting frees, and keeps nothing cyclic; left on, the collector
    walks the tables' and the cache's objects again and again, a third of a
    re-scan's time (docs/hipify.md).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def scan_tree(
    root: str | os.PathLike[str],
    *,
    engine: str = "fast",
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    cache_dir: str | os.PathLike[str] | None = None,
    jobs: int | None = None,
    warnings: bool = True,
    hipify_perl: str | None = None,
    progress: Progress | None = None,
    files: Sequence[str] | None = None,
    vendored: Sequence[str] = (),
    not_vendored: Sequence[str] = (),
    hazards_off: Sequence[str] = (),
) -> ScanResult:
    """Examine every CUDA-relevant file under ``root`` and sum up.

    Files whose content (sha256) was examined before by the same engine and
    tables come from ``cache_dir``, and so do the previous scan's totals, which
    are updated with what changed (:func:`_sum_up`); identical files are examined
    once. Raises ToolMissing when hipify-perl (whose tables the fast engine
    reads) is absent. ``vendored`` / ``not_vendored``: the project's globs of
    third-party code, added to and taken from what stack.hipify.noise detects;
    ``hazards_off``: hazard rules the project does not count.
    """
    import json
    import marshal

    from stack.hipify.examine import usable_cpus

    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, not {engine!r}")
    started = time.monotonic()
    timings: dict[str, float] = {}
    root = os.fspath(root)
    tables = load_tables(hipify_perl, cache_dir=cache_dir)
    timings["tables_s"] = time.monotonic() - started
    skipped: list[str] = []
    paths = (
        list(dict.fromkeys(files))
        if files is not None
        else collect_files(root, include, exclude, skipped=skipped)
    )
    t0 = time.monotonic()
    hashed: list[tuple[str, str, int, bool]] = []
    for rel in paths:
        data = read_file(root, rel)
        device_code = b"__global__" in data or b"__device__" in data
        hashed.append((rel, hashlib.sha256(data).hexdigest(), len(data), device_code))
    timings["hash_s"] = time.monotonic() - t0
    key = engine_key(engine, tables, warnings)
    cache = None
    cores: dict[str, str] = {}
    if cache_dir is not None:
        from stack.hipify.cache import FindingsCache

        cache = FindingsCache(cache_dir, key)
    try:
        if cache is not None:
            t0 = time.monotonic()
            cores = cache.records(sha for _, sha, _, _ in hashed)
            timings["cache_read_s"] = time.monotonic() - t0
        todo: dict[str, tuple[str, str, int]] = {}
        for rel, sha, size, _ in hashed:
            if sha not in cores and sha not in todo:
                todo[sha] = (rel, sha, size)
        duplicates = sum(1 for _, sha, _, _ in hashed if sha not in cores) - len(todo)
        cached = len(hashed) - len(todo) - duplicates
        t0 = time.monotonic()
        jobs = jobs or usable_cpus()
        examine = examine_fast if engine == "fast" else examine_with_hipify_perl
        fresh = examine(
            root, list(todo.values()), tables, jobs=jobs, warnings=warnings, progress=progress
        )
        timings["examine_s"] = time.monotonic() - t0
        t0 = time.monotonic()
        aggregates: dict[str, dict[str, Any]] = {}
        new_entries: dict[str, tuple[str, bytes]] = {}
        for sha, findings in fresh.items():
            core = record_core(findings)
            agg = aggregates[sha] = aggregate(core)
            cores[sha] = json.dumps(core, separators=(",", ":"))
            new_entries[sha] = (cores[sha], marshal.dumps(agg))
        selection = json.dumps([list(include), list(exclude), files is not None])
        totals, totals_from = _sum_up(hashed, aggregates, cores, cache, selection)
        vendored_files, noise = _noise(
            hashed, totals, aggregates, cores, cache, tables, vendored, not_vendored, hazards_off
        )
        timings["totals_s"] = time.monotonic() - t0
        if cache is not None:
            t0 = time.monotonic()
            state = None if totals_from == "unchanged" else (selection, totals.dumps())
            cache.put_many(new_entries, state)
            _prune(cache, len(totals.files))
            timings["cache_write_s"] = time.monotonic() - t0
    finally:
        if cache is not None:
            cache.close()
    t0 = time.monotonic()
    summary = totals.summary()
    if skipped:
        summary["skipped_names"] = skipped[:100]
    summary["effort_everything"] = summary.pop("effort")
    summary.update(noise)
    timings["summary_s"] = time.monotonic() - t0
    return ScanResult(
        engine=engine,
        tables=tables,
        files=[(rel, sha, dev) for rel, sha, _, dev in hashed],
        cores=cores,
        totals=totals,
        totals_from=totals_from,
        summary=summary,
        examined=len(todo),
        cached=cached,
        duplicates=duplicates,
        timings=timings,
        vendored=vendored_files,
    )


def _noise(
    hashed: list[tuple[str, str, int, bool]],
    totals: Totals,
    aggregates: dict[str, dict[str, Any]],
    cores: dict[str, str],
    cache: Any,
    tables: Tables,
    vendored: Sequence[str],
    not_vendored: Sequence[str],
    hazards_off: Sequence[str],
) -> tuple[dict[str, str], dict[str, Any]]:
    """The vendored files (path -> why) and stack.hipify.noise's project-only assessment.

    The vendored files' totals are summed from scratch (their aggregates come from the
    cache): they are few, and the path lists a project edits change which they are
    without changing any file.
    """
    from stack.hipify.noise import assess, vendored_reason

    add = [glob_to_regex(p) for p in vendored]
    take = [glob_to_regex(p) for p in not_vendored]
    vendored_files: dict[str, str] = {}
    for rel, _sha, _size, _dev in hashed:
        why = vendored_reason(rel, add, take)
        if why is not None:
            vendored_files[rel] = why
    entries = [(rel, sha, dev) for rel, sha, _size, dev in hashed if rel in vendored_files]
    if entries:
        _load_aggregates(aggregates, [sha for _, sha, _ in entries], cache, cores)
    vendored_totals = Totals.build((rel, sha, dev, aggregates[sha]) for rel, sha, dev in entries)
    known = _known_cuda_names(tables)
    return vendored_files, assess(totals, vendored_totals, vendored_files, known, hazards_off)


_KNOWN: dict[str, frozenset[str]] = {}


def _known_cuda_names(tables: Tables) -> frozenset[str]:
    """Every CUDA name hipify-perl's tables hold: what it converts and what it warns of."""
    known = _KNOWN.get(tables.key)
    if known is None:
        known = _KNOWN[tables.key] = frozenset(
            [s.cuda for s in tables.substs] + [c.name for c in tables.checks]
        )
    return known


def _sum_up(
    hashed: list[tuple[str, str, int, bool]],
    aggregates: dict[str, dict[str, Any]],
    cores: dict[str, str],
    cache: Any,
    selection: str,
) -> tuple[Totals, str]:
    """The totals of the scanned files, and how they were reached.

    With a cache holding an earlier scan of the same selection, its totals are
    updated with the files that changed ("updated", or "unchanged"):
    :func:`_update`. Otherwise, or when that cannot be done, every file is
    summed ("summed"). ``aggregates`` holds the freshly examined files' and
    receives what is loaded; ``cores`` are the scanned files' records.
    """
    current = {rel: (sha, dev) for rel, sha, _, dev in hashed}
    blob = cache.totals_state(selection) if cache is not None else None
    if blob is not None:
        updated = _update(blob, current, aggregates, cores, cache)
        if updated is not None:
            return updated
    _load_aggregates(aggregates, [sha for sha, _ in current.values()], cache, cores)
    return Totals.build(
        (rel, sha, dev, aggregates[sha]) for rel, (sha, dev) in current.items()
    ), "summed"


def _update(
    blob: bytes,
    current: dict[str, tuple[str, bool]],
    aggregates: dict[str, dict[str, Any]],
    cores: dict[str, str],
    cache: Any,
) -> tuple[Totals, str] | None:
    """The stored totals ``blob`` brought up to ``current``; None: sum instead.

    Loads only the changed files' aggregates, and those of the few files that
    list an API's places anew (:meth:`Totals.refill`). None when the state is
    damaged or of another version, when so many files changed that summing is
    as cheap, or when an aggregate the update needs is not in the cache.
    """
    try:
        totals = Totals.loads(blob)
    except ValueError:
        return None
    known = totals.files
    gone = [p for p, (sha, _, _) in known.items() if current.get(p, ("",))[0] != sha]
    new = [p for p, (sha, _) in current.items() if p not in known or known[p][0] != sha]
    if not gone and not new:
        return totals, "unchanged"
    if len(gone) + len(new) > max(16, len(current) // 4):
        return None
    old_shas = {p: known[p][0] for p in gone}
    _load_aggregates(aggregates, [*old_shas.values(), *(current[p][0] for p in new)], cache, cores)

    def load(paths: list[str]) -> dict[str, dict[str, Any]]:
        shas = [current[p][0] for p in paths]
        _load_aggregates(aggregates, shas, cache, cores)
        return {p: aggregates[sha] for p, sha in zip(paths, shas, strict=True)}

    try:
        for p in gone:
            totals.remove(p, aggregates[old_shas[p]])
        for p in new:
            sha, dev = current[p]
            totals.add(p, sha, dev, aggregates[sha])
        totals.refill(load)
    except KeyError:
        return None  # a gone file's aggregate the cache no longer holds
    return totals, "updated"


def _load_aggregates(
    aggregates: dict[str, dict[str, Any]],
    shas: list[str],
    cache: Any,
    cores: dict[str, str],
) -> None:
    """Load the aggregates of ``shas`` into ``aggregates``.

    One the cache no longer holds (another scan of the project pruned it since this
    one read its record) is derived from the record text in ``cores``.
    """
    import json
    import marshal

    missing = [sha for sha in shas if sha not in aggregates]
    if missing and cache is not None:
        for sha, blob in cache.aggregates(missing).items():
            # marshal, not pickle: it builds plain data and runs nothing; the cache
            # holds only what scans wrote (and a bad entry fails loudly)
            aggregates[sha] = marshal.loads(blob)  # noqa: S302
    for sha in missing:
        if sha not in aggregates and sha in cores:
            aggregates[sha] = aggregate(json.loads(cores[sha]))


# A cache may hold this many findings per file its states name, plus the slack,
# before the unnamed ones are pruned: old versions of edited files stay a while
# (a reverted edit is still a hit) without the cache growing with every edit.
PRUNE_FACTOR = 2
PRUNE_SLACK = 1000


def _prune(cache: Any, files: int) -> None:
    """Drop findings no scan state names, once there are many more than the states name."""
    count = cache.count()
    if count <= PRUNE_FACTOR * files + PRUNE_SLACK:
        return
    keep: set[str] = set()
    for blob in cache.totals_states():
        try:
            keep.update(sha for sha, _, _ in Totals.loads(blob).files.values())
        except ValueError:
            continue  # a damaged state names nothing
    if len(keep) * PRUNE_FACTOR + PRUNE_SLACK < count:
        cache.prune(keep)
