"""What a runner receives (RunContext) and returns (RunResult), and how it is written.

A runner is ``run(params: dict, ctx: RunContext) -> RunResult``. It never
writes result.json itself: the CLI does, atomically, so that the worker sees
either no result or a whole one.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stack.contract import (
    ERRORED,
    RESULT_FILENAME,
    SCHEMA_VERSION,
    STATUSES,
    SUCCEEDED,
    artifact_path_problem,
)
from stack.events import Emitter

# The source tree of a kind with takes_source, in WORK (the worker puts it there).
SOURCE_DIR = "src"
# A writable folder that outlives jobs, per project and kind; the worker sets it for
# kinds with takes_source. Read here once (cache_dir_from_environment), never by a kind.
CACHE_DIR_VARIABLE = "ROCPATH_CACHE_DIR"


def cache_dir_from_environment() -> Path | None:
    """The job's cache folder as the worker named it, or None when it gave none."""
    value = os.environ.get(CACHE_DIR_VARIABLE)
    return Path(value) if value else None


def utc_now_iso(now: float | None = None) -> str:
    """ISO 8601 in UTC with microseconds and a Z, as result.json wants.

    Built with time rather than datetime to keep the runner's start-up light.
    """
    now = time.time() if now is None else now
    seconds = int(now)
    micros = round((now - seconds) * 1_000_000)
    if micros == 1_000_000:
        seconds, micros = seconds + 1, 0
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{micros:06d}Z"


@dataclass
class Measurement:
    """One number a job measured, with what it takes to compare it later."""

    benchmark: str
    metric: str
    unit: str
    value: float
    samples: list[float] = field(default_factory=list)
    case: dict[str, str | int | float | bool] = field(default_factory=dict)
    better: str = "higher"

    def to_dict(self) -> dict[str, Any]:
        """The result.json form."""
        return {
            "benchmark": self.benchmark,
            "case": dict(self.case),
            "metric": self.metric,
            "unit": self.unit,
            "value": self.value,
            "samples": list(self.samples),
            "better": self.better,
        }


@dataclass
class Artifact:
    """A file the job left in OUT, named by its path relative to OUT."""

    path: str
    content_type: str = "application/octet-stream"
    description: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The result.json form."""
        return {
            "path": self.path,
            "content_type": self.content_type,
            "description": self.description,
        }


@dataclass
class RunResult:
    """What a runner hands back; the CLI adds kind, timestamps and schema version."""

    status: str = SUCCEEDED
    environment: dict[str, Any] | None = None
    measurements: list[Measurement | dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    artifacts: list[Artifact | dict[str, Any]] = field(default_factory=list)
    error: str | None = None


@dataclass
class RunContext:
    """Where a runner works: OUT (writable), work (inputs, read-only), the event emitter.

    ``cache_dir`` is a writable folder that outlives the job (a project's cache,
    given to kinds with takes_source), or None: no parameter names one, so that
    a team never reaches another's cache.
    """

    out: Path
    emit: Emitter
    work: Path
    cache_dir: Path | None = None

    def source_root(self, subpath: str = "") -> Path:
        """WORK/src, or a folder inside it; ValueError for a path that leaves it."""
        base = (self.work / SOURCE_DIR).resolve()
        root = (base / subpath).resolve() if subpath else base
        if root != base and base not in root.parents:
            raise ValueError(f"path {subpath!r} leaves the source tree")
        return root

    def write_artifact(
        self,
        relpath: str,
        data: str | bytes,
        content_type: str = "text/plain; charset=utf-8",
        description: str = "",
    ) -> Artifact:
        """Write a file under OUT and return its Artifact record.

        The path is checked here, when the runner can still be fixed by reading
        the traceback, rather than when result.json is validated later.
        """
        problem = artifact_path_problem(relpath)
        if problem:
            raise ValueError(f"artifact path {relpath!r} {problem}")
        target = self.out / relpath
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            target.write_text(data, encoding="utf-8")
        else:
            target.write_bytes(data)
        return Artifact(path=relpath, content_type=content_type, description=description)


def _as_dict(item: Any) -> dict[str, Any]:
    return item.to_dict() if hasattr(item, "to_dict") else dict(item)


def build_result(
    kind: str,
    result: RunResult,
    started_at: str,
    finished_at: str,
    out: Path | None = None,
) -> dict[str, Any]:
    """Turn a RunResult into the result.json document.

    Checks the cheap things the schema would reject (status, artifact paths,
    files that do not exist) so that a runner bug becomes an errored result
    with a reason, not a result the orchestrator refuses to read.
    """
    if result.status not in STATUSES:
        raise ValueError(f"runner returned status {result.status!r}, not one of {STATUSES}")
    artifacts = [_as_dict(a) for a in result.artifacts]
    for artifact in artifacts:
        problem = artifact_path_problem(artifact.get("path"))
        if problem:
            raise ValueError(f"artifact path {artifact.get('path')!r} {problem}")
        if out is not None and not (out / artifact["path"]).is_file():
            raise ValueError(f"artifact {artifact['path']!r} is not a file in OUT")
    error = result.error
    if result.status == ERRORED and not error:
        error = "runner reported errored without saying why"
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": kind,
        "status": result.status,
        "started_at": started_at,
        "finished_at": finished_at,
        "environment": result.environment,
        "measurements": [_as_dict(m) for m in result.measurements],
        "summary": dict(result.summary),
        "artifacts": artifacts,
        "error": error,
    }


def write_result(out: Path, document: dict[str, Any]) -> Path:
    """Write result.json atomically (temporary file in OUT, then os.replace).

    NaN and infinities are refused here (json would write invalid JSON).
    No fsync: the worker reads the file right after the process ends, and an
    atomic rename already guarantees it never sees half a file.
    """
    text = json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    target = out / RESULT_FILENAME
    tmp = out / f".{RESULT_FILENAME}.{os.getpid()}.tmp"
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()
    return target
