"""The hipify-convert kind: the CUDA tree translated to HIP by hipify-perl, as a tarball and a diff.

The real tool does the translation (the fast engine only assesses); the
hipified tree is what the compile-check kind compiles and what a developer
starts porting from.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from stack.hipify.schemas import HIPIFY_CONVERT_PARAMS, HIPIFY_PERL_HINT
from stack.kinds.base import Cap, Kind, RoadmapTask
from stack.runtime import Measurement, RunContext, RunResult
from stack.tools import ToolError, ToolMissing

KIND = Kind(
    name="hipify-convert",
    title="HIPIFY conversion",
    description=(
        "Translates the CUDA files of the source tree to HIP with hipify-perl; the "
        "hipified tree as hipified.tar.gz and the changes as a unified diff."
    ),
    params_schema=HIPIFY_CONVERT_PARAMS,
    default_timeout_s=3600,
    runner="stack.kinds.hipify_convert:run",
    takes_source=True,
    phases=(2,),
    roadmap_tasks=(RoadmapTask.PORT_KERNELS,),
    install_hints={"hipify-perl": HIPIFY_PERL_HINT},
    param_caps={"jobs": Cap.CPUS},
)


def _describe_tool(cache_dir: Path | None) -> dict[str, Any]:
    """The summary's "tool": the tables' description, else the script's path and sha256.

    The translation itself needs no tables, so a script whose tables this reader
    cannot extract must not fail it; the project's cache spares the extraction
    when a scan already paid for it.
    """
    from stack.hipify.tables import TablesError, file_sha256, find_hipify_perl, load_tables

    try:
        return load_tables(cache_dir=str(cache_dir) if cache_dir else None).describe()
    except TablesError:
        script = find_hipify_perl()
        return {"script": script, "sha256": file_sha256(script)}


def run(params: dict[str, Any], ctx: RunContext) -> RunResult:
    """Translate WORK/src; artifacts hipified.tar.gz and hipify.diff."""
    from stack.hipify.convert import diff_stats, hipify_tree, tar_tree, unified_diff
    from stack.hipify.scan import collect_files

    try:
        root = ctx.source_root(params.get("path", ""))
    except ValueError as exc:
        return RunResult(status="errored", error=str(exc))
    if not root.is_dir():
        return RunResult(status="errored", error=f"no source tree: {root} is not a folder")
    files = collect_files(root, params.get("include", []), params.get("exclude", []))
    ctx.emit.progress(5, f"translating {len(files)} files with hipify-perl")
    try:
        tool = _describe_tool(ctx.cache_dir)
        with tempfile.TemporaryDirectory(prefix="rocpath-hipify-") as tmp:
            dest = Path(tmp) / "tree"
            conversion = hipify_tree(root, dest, files, jobs=params.get("jobs") or None)
            ctx.emit.progress(70, f"{len(conversion.changed)} files changed; writing the diff")
            diff = unified_diff(root, dest, conversion.changed)
            ctx.emit.progress(85, "packing the hipified tree")
            tarball = tar_tree(dest)
    except ToolMissing as exc:
        return RunResult(status="errored", error=str(exc))
    except ToolError as exc:
        return RunResult(status="errored", error=f"{type(exc).__name__}: {exc}")
    added, removed = diff_stats(diff)
    artifacts = [
        ctx.write_artifact(
            "hipified.tar.gz",
            tarball,
            "application/gzip",
            "the source tree with its CUDA files translated by hipify-perl (under hipified/)",
        ),
        ctx.write_artifact(
            "hipify.diff",
            diff.encode("latin-1"),
            "text/x-diff",
            "unified diff of the translation (a/ original, b/ hipified)",
        ),
    ]
    if conversion.stderr.strip():
        artifacts.append(
            ctx.write_artifact(
                "hipify-convert.log",
                conversion.stderr.encode("latin-1"),
                "text/plain; charset=latin-1",
                "what hipify-perl printed while translating",
            )
        )
    summary = {
        "tool": tool,
        "files": len(files),
        "files_changed": len(conversion.changed),
        "files_unchanged": len(files) - len(conversion.changed) - len(conversion.failures),
        "files_failed": conversion.failures,
        "lines_added": added,
        "lines_removed": removed,
        "hipify_calls": conversion.calls,
        "changed": conversion.changed[:1000],
    }
    status = "succeeded"
    error = None
    if conversion.failures:
        status = "failed"
        error = f"hipify-perl did not translate {len(conversion.failures)} files: " + ", ".join(
            conversion.failures[:5]
        )
    return RunResult(
        status=status,
        measurements=[
            Measurement(
                "hipify-convert",
                "files_changed",
                "files",
                len(conversion.changed),
                [len(conversion.changed)],
                better="lower",
            ),
            Measurement("hipify-convert", "lines_added", "lines", added, [added], better="lower"),
            Measurement(
                "hipify-convert", "lines_removed", "lines", removed, [removed], better="lower"
            ),
        ],
        summary=summary,
        artifacts=artifacts,
        error=error,
    )
