"""The reference engine: run the real ``hipify-perl -examine`` and parse what it prints.

Both warning wordings are read (REFERENCE.md, "HIPIFY"):

- Debian trixie's 6.0.x: ``  warning: t.cu:9: unsupported identifier "X"``,
  ``deprecated identifier "X" since CUDA 10.0``, ``removed identifier "X" since
  CUDA 12.0``, ``experimental identifier "X" in HIP 6.0.0``, ``unsupported by
  ROC identifier "X"``, ``unsupported device function "X": <line>``;
- HIP 6.3: ``  t.cu:9: warning: unsupported HIP identifier: X`` (also ``ROCm
  HIP`` and ``ROC``), ``deprecated CUDA identifier: X since CUDA 10.0``,
  ``removed CUDA identifier: X since ...``, ``experimental ROCm HIP
  identifier: X 6.3.0``, ``unsupported device function "X": <line>``;
- both: ``  warning: t.cu:#9 : <translated line>`` for a ``cudaX`` token left
  after translation.

Many files go to one process (hipify-perl pays about 0.4 s of start-up per
process) and the batches run in parallel. The tool runs with a fixed Perl hash
seed so that its output is reproducible (docs/hipify.md says why that matters).
Output is read as Latin-1, as the tool reads and writes bytes.
"""

from __future__ import annotations

import heapq
import os
import re
import subprocess
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from stack.hipify.tables import CUDA_TOKEN, PERL_DETERMINISTIC_ENV, UNCONVERTED, find_hipify_perl
from stack.tools import ToolError, ToolTimeout

_STATS_HEADER = re.compile(r"^\[HIPIFY\] info: file '(.*)' statistics:$")
_REF = re.compile(r"^  (.+?) => (.*): (\d+)$")
_COUNT = re.compile(r"^  (CONVERTED refs count|TOTAL lines of code|WARNINGS): (\d+)$")

# Worded alike by both releases.
_DEVICE_FUNCTION_MESSAGE = (
    re.compile(r'^unsupported device function "(?P<id>[^"]*)": (?P<src>.*)$', re.S),
    "unsupported_device_function",
)
# Debian 6.0 wording: "  warning: FILE:LINE: <message>"
_OLD_MESSAGES = [
    (re.compile(r'^unsupported identifier "(?P<id>[^"]*)"$'), "unsupported"),
    (re.compile(r'^unsupported by ROC identifier "(?P<id>[^"]*)"$'), "unsupported"),
    (re.compile(r'^deprecated identifier "(?P<id>[^"]*)" since (?P<since>.*)$'), "deprecated"),
    (re.compile(r'^removed identifier "(?P<id>[^"]*)" since (?P<since>.*)$'), "removed"),
    (re.compile(r'^experimental identifier "(?P<id>[^"]*)" in (?P<since>.*)$'), "experimental"),
    _DEVICE_FUNCTION_MESSAGE,
]
# HIP 6.3 wording: "  FILE:LINE: warning: <message>"
_NEW_MESSAGES = [
    (re.compile(r"^unsupported (?:ROCm HIP |HIP |ROC )identifier: (?P<id>\S+)$"), "unsupported"),
    (re.compile(r"^deprecated CUDA identifier: (?P<id>\S+) since (?P<since>.*)$"), "deprecated"),
    (re.compile(r"^removed CUDA identifier: (?P<id>\S+) since (?P<since>.*)$"), "removed"),
    (
        re.compile(r"^experimental ROCm HIP identifier: (?P<id>\S+) (?P<since>\S+)$"),
        "experimental",
    ),
    _DEVICE_FUNCTION_MESSAGE,
]


@dataclass
class ExaminedFile:
    """What hipify-perl printed about one file."""

    path: str
    warnings: list[dict[str, Any]] = field(default_factory=list)
    printed: bool = False  # a statistics block was printed
    converted_refs: int | None = None
    loc: int | None = None
    warnings_count: int | None = None
    refs: list[tuple[str, str, int]] = field(default_factory=list)  # as printed: per target!


@dataclass
class ExamineOutput:
    """A parsed ``-examine`` run (or several, merged)."""

    files: dict[str, ExaminedFile] = field(default_factory=dict)
    global_stats: dict[str, Any] | None = None
    unparsed: list[str] = field(default_factory=list)

    def file(self, path: str) -> ExaminedFile:
        """The record of ``path``, created empty when the tool said nothing about it."""
        record = self.files.get(path)
        if record is None:
            record = self.files[path] = ExaminedFile(path)
        return record


def _split_location(rest: str, known: set[str] | None, sep: re.Pattern[str]) -> Any:
    """Split ``FILE<sep>MESSAGE`` where FILE may itself hold colons: prefer a known file."""
    candidates = list(sep.finditer(rest))
    if not candidates:
        return None
    if known:
        for m in candidates:
            if rest[: m.start()] in known:
                return rest[: m.start()], m
    m = candidates[0]
    return rest[: m.start()], m


_OLD_SEP = re.compile(r":(?P<hash>#?)(?P<line>\d+)(?:: | : )")
_NEW_SEP = re.compile(r":(?P<line>\d+): warning: ")


def parse_warning_line(line: str, known: set[str] | None = None) -> dict[str, Any] | None:
    """One warning line in either wording -> {file, line, identifier, kind, since, source}."""
    if line.startswith("  warning: "):
        rest = line[len("  warning: ") :]
        split = _split_location(rest, known, _OLD_SEP)
        if split is None:
            return None
        path, m = split
        message = rest[m.end() :]
        line_no = int(m.group("line"))
        if m.group("hash"):
            if not m.group(0).endswith(" : "):
                return None
            token = CUDA_TOKEN.search(message)
            return {
                "file": path,
                "line": line_no,
                "identifier": token.group(1) if token else "Launch",
                "kind": UNCONVERTED,
                "since": None,
                "source": message,
            }
        if m.group(0).endswith(" : "):
            return None
        return _message(path, line_no, message, _OLD_MESSAGES)
    if line.startswith("  "):
        rest = line[2:]
        split = _split_location(rest, known, _NEW_SEP)
        if split is None:
            return None
        path, m = split
        return _message(path, int(m.group("line")), rest[m.end() :], _NEW_MESSAGES)
    return None


def _message(path: str, line_no: int, message: str, table: list[Any]) -> dict[str, Any] | None:
    for rx, kind in table:
        m = rx.match(message)
        if m:
            groups = m.groupdict()
            since = groups.get("since")
            if kind == "experimental" and since and not since.startswith("HIP"):
                since = f"HIP {since}"
            return {
                "file": path,
                "line": line_no,
                "identifier": groups["id"],
                "kind": kind,
                "since": since,
                "source": groups.get("src"),
            }
    return None


def parse_examine_output(text: str, files: Iterable[str] | None = None) -> ExamineOutput:
    """Parse what ``hipify-perl -examine`` wrote to stderr.

    ``files`` (the paths given to the tool) disambiguates paths holding colons;
    they also get a record each, so a file the tool was silent about is known
    to have had nothing to report. Lines are split on ``\\n`` only: a source line
    quoted in a warning may hold a ``\\r``.
    """
    known = set(files) if files is not None else None
    out = ExamineOutput()
    for path in known or ():
        out.file(path)
    current: ExaminedFile | None = None
    in_refs = False
    global_block: dict[str, Any] | None = None
    for line in text.split("\n"):
        if not line:
            continue
        header = _STATS_HEADER.match(line)
        if header:
            name = header.group(1)
            in_refs = False
            if name == "GLOBAL" and (known is None or name not in known):
                global_block = {"refs": []}
                out.global_stats = global_block
                current = None
            else:
                global_block = None
                current = out.file(name)
                current.printed = True
            continue
        if line == "[HIPIFY] info: CONVERTED refs by names:":
            in_refs = True
            continue
        count = _COUNT.match(line)
        if count and (current is not None or global_block is not None):
            key = {
                "CONVERTED refs count": "converted_refs",
                "TOTAL lines of code": "loc",
                "WARNINGS": "warnings_count",
            }[count.group(1)]
            if current is not None:
                setattr(current, key, int(count.group(2)))
            else:
                global_block[key] = int(count.group(2))  # type: ignore[index]
            continue
        warning = parse_warning_line(line, known)
        if warning is not None:
            in_refs = False
            current = None
            global_block = None
            out.file(warning.pop("file")).warnings.append(warning)
            continue
        if in_refs:
            ref = _REF.match(line)
            if ref:
                entry = (ref.group(1), ref.group(2), int(ref.group(3)))
                if current is not None:
                    current.refs.append(entry)
                elif global_block is not None:
                    global_block["refs"].append(entry)
                continue
        out.unparsed.append(line)
    return out


# --- running the tool ------------------------------------------------------------------


def usable_cpus() -> int:
    """CPUs this process may run on (the affinity mask: a container's share, not the host's)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


@dataclass
class ExamineRun:
    """How the real tool's runs went (merged over batches)."""

    output: ExamineOutput
    calls: int
    stderr: str


def _run_batch(
    script: str,
    paths: Sequence[str],
    cwd: str,
    timeout: float,
    quiet: bool,
) -> tuple[int, str]:
    # "--": a file named "-o=x.cu" is a file, not an option
    argv = [script, "-examine"] + (["-quiet-warnings"] if quiet else []) + ["--", *paths]
    return run_script(argv, cwd, timeout)


def run_script(argv: Sequence[str], cwd: str | os.PathLike[str], timeout: float) -> tuple[int, str]:
    """Run hipify-perl with a deterministic perl, stdout discarded: (exit status, stderr).

    Not stack.tools.run_tool: that decodes as UTF-8 and keeps stdout, where the
    tool's output must be read as Latin-1 (it reads and writes bytes). Killed at
    ``timeout`` (ToolTimeout) or when the caller is interrupted; dies with its parent.
    """
    from stack.tools import die_with_parent_preexec

    env = {**os.environ, **PERL_DETERMINISTIC_ENV}
    proc = subprocess.Popen(
        list(argv),
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        preexec_fn=die_with_parent_preexec(),
    )
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        raise ToolTimeout("hipify-perl", timeout, "", err.decode("latin-1")) from None
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return proc.returncode, err.decode("latin-1")


_T = TypeVar("_T")


def balanced_groups(weighted: Iterable[tuple[int, _T]], n_groups: int) -> list[list[_T]]:
    """Up to ``n_groups`` groups of (weight, item)s' items with similar total weights.

    Greedy, heaviest first, each to the group lightest so far: the groups run in
    parallel, so the heaviest one decides when all are done. Empty groups are
    left out.
    """
    heap = [(0, i) for i in range(n_groups)]
    groups: list[list[_T]] = [[] for _ in range(n_groups)]
    for weight, item in sorted(weighted, key=lambda pair: -pair[0]):
        load, i = heapq.heappop(heap)
        groups[i].append(item)
        heapq.heappush(heap, (load + weight, i))
    return [g for g in groups if g]


def batches_by_size(
    paths: Sequence[str], root: str, jobs: int, max_files: int = 256
) -> list[list[str]]:
    """Split files into about ``jobs`` x k batches of similar total size (sorted paths)."""
    sizes = []
    for p in paths:
        try:
            sizes.append((os.path.getsize(os.path.join(root, p)), p))
        except OSError:
            sizes.append((0, p))
    n_batches = max(jobs, -(-len(paths) // max_files))
    return [sorted(b) for b in balanced_groups(sizes, n_batches)]


def run_batches(run: Callable[[list[str]], _T], batches: list[list[str]], jobs: int) -> list[_T]:
    """``run`` over each batch, results in batch order: inline for one, else on ``jobs`` threads."""
    if len(batches) <= 1:
        return [run(b) for b in batches]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(run, batches))


def run_examine(
    paths: Sequence[str],
    root: str,
    *,
    script: str | None = None,
    jobs: int | None = None,
    quiet_warnings: bool = False,
    timeout: float = 3600.0,
    max_files: int = 256,
) -> ExamineRun:
    """``hipify-perl -examine`` over ``paths`` (relative to ``root``), batched and parallel.

    Raises ToolMissing when hipify-perl is absent, ToolTimeout when a batch
    runs past ``timeout`` seconds, and ToolError when one exits non-zero: the
    tool dies at a file it cannot read, leaving the rest of its batch
    unexamined, which would read as files with nothing to report.
    """
    tool = find_hipify_perl(script)
    jobs = jobs or usable_cpus()
    out = ExamineOutput()
    if not paths:
        return ExamineRun(out, 0, "")
    batches = batches_by_size(paths, root, jobs, max_files)
    results = run_batches(
        lambda b: _run_batch(tool, b, root, timeout, quiet_warnings), batches, jobs
    )
    stderr_parts = []
    for batch, (rc, err) in zip(batches, results, strict=True):
        if rc != 0:
            last = next((line for line in reversed(err.splitlines()) if line.strip()), "")
            raise ToolError(
                "hipify-perl",
                f"hipify-perl -examine exited with status {rc} on a batch of {len(batch)} "
                f"files: {last.strip()[:500]}",
            )
        # every path of the batch gets a record: one the tool was silent about is clean
        parsed = parse_examine_output(err, batch)
        out.files.update(parsed.files)
        out.unparsed.extend(parsed.unparsed)
        stderr_parts.append(err)
    return ExamineRun(output=out, calls=len(batches), stderr="".join(stderr_parts))


# --- comparing the engines ---------------------------------------------------------------
# The tests and bench/hipify_scan.py hold the fast engine to the tool's output through these.


def tool_view(f: dict[str, Any]) -> dict[str, Any]:
    """The fast engine's findings as hipify-perl prints them (refs counted per target)."""
    per_target: dict[str, int] = {}
    for _cuda, hip, _type, n in f["refs"]:
        per_target[hip] = per_target.get(hip, 0) + n
    return {
        "printed": f["printed"],
        "loc": f["loc"] if f["printed"] else None,
        "converted_refs": f["converted_refs"] if f["printed"] else None,
        "warnings_count": f["warnings_count"] if f["printed"] else None,
        "refs": sorted((c, h, per_target[h]) for c, h, _t, _n in f["refs"]),
        "warnings": sorted((w[0], w[2], w[3], w[4] or "") for w in f["warnings"]),
    }


def examined_view(e: ExaminedFile) -> dict[str, Any]:
    """What hipify-perl printed about a file, in tool_view's shape."""
    return {
        "printed": e.printed,
        "loc": e.loc,
        "converted_refs": e.converted_refs,
        "warnings_count": e.warnings_count,
        "refs": sorted(e.refs),
        "warnings": sorted(
            (w["line"], w["identifier"], w["kind"], w["since"] or "") for w in e.warnings
        ),
    }
