"""The hipify-scan kind: how much of a CUDA tree hipify converts, and what is left to port.

Input: the source tree in the job's work folder (``WORK/src``; the portal puts
an upload or a clone there). Output: findings per file (``hipify/findings.json``),
their counts alone (``hipify/files.json``), a Markdown report, and the totals as
measurements, so the portal can draw the burn-down of unsupported references across
scans.
"""

from __future__ import annotations

import json
import time
from typing import Any

from stack.hipify.schemas import HIPIFY_PERL_HINT, HIPIFY_SCAN_PARAMS
from stack.kinds.base import Cap, Kind, ProjectFact, RoadmapTask
from stack.runtime import SOURCE_DIR, Measurement, RunContext, RunResult
from stack.tools import ToolError, ToolMissing

KIND = Kind(
    name="hipify-scan",
    title="HIPIFY porting assessment",
    description=(
        "Examines every CUDA-relevant file of the source tree with hipify-perl's tables: "
        "references it converts (by name and API family), identifiers HIP lacks, deprecated "
        "and removed ones, each marked as in code, a comment, a string or a longer "
        "identifier; totals, a porting-effort estimate with its inputs, findings per file "
        "and a Markdown report. Unchanged files come from the cache."
    ),
    params_schema=HIPIFY_SCAN_PARAMS,
    default_timeout_s=3600,
    runner="stack.kinds.hipify_scan:run",
    takes_source=True,
    phases=(1, 2),
    roadmap_tasks=(RoadmapTask.ASSESS_PORTING,),
    install_hints={"hipify-perl": HIPIFY_PERL_HINT},
    param_caps={"jobs": Cap.CPUS},
    project_defaults={
        "vendored": ProjectFact.VENDORED,
        "not_vendored": ProjectFact.NOT_VENDORED,
        "hazards_off": ProjectFact.HAZARDS_OFF,
    },
)


# hipify/files.json: findings.json's per-file counts without refs and warnings, a
# few percent of its size, so the portal's file table need not parse every warning.
FILES_SCHEMA = "rocpath.hipify-files/1"


_TOTAL_UNITS = (
    ("files", "files"),
    ("lines", "lines"),
    ("converted_refs", "refs"),
    ("cuda_refs", "refs"),
    ("warnings", "warnings"),
)


def measurements_for(summary: dict[str, Any]) -> list[Measurement]:
    """Totals as measurements: everything here is CUDA work left, so lower is better."""
    totals = summary["totals"]
    out = [
        Measurement("hipify-scan", metric, unit, totals[metric], [totals[metric]], better="lower")
        for metric, unit in _TOTAL_UNITS
    ]
    for kind, counts in summary["warnings_by_kind"].items():
        for scope, value in (("all", counts["total"]), ("code", counts["code"])):
            out.append(
                Measurement(
                    "hipify-scan",
                    kind,
                    "refs",
                    value,
                    [value],
                    case={"scope": scope},
                    better="lower",
                )
            )
    hours = summary["effort"]["hours"]
    out.append(Measurement("hipify-scan", "effort", "h", hours, [hours], better="lower"))
    # The project's own code (vendored files out, look-alike identifiers out): what
    # the burn-down draws, so a vendored header never reads as work left.
    inputs = {**summary["effort"]["inputs"], "hazards": summary["hazards"]["counted"]}
    for metric, term in _PROJECT_METRICS:
        if term in inputs:
            value = inputs[term]
            out.append(
                Measurement(
                    "hipify-scan",
                    metric,
                    "refs",
                    value,
                    [value],
                    case={"scope": "project"},
                    better="lower",
                )
            )
    return out


# burn-down metric -> the estimate input it is (stack.hipify.noise.assess)
_PROJECT_METRICS = (
    ("unsupported", "unsupported_refs"),
    ("removed", "removed_refs"),
    ("deprecated", "deprecated_refs"),
    ("unconverted", "unconverted_refs"),
    ("hazards", "hazards"),
)


def run(params: dict[str, Any], ctx: RunContext) -> RunResult:
    """Scan WORK/src with the chosen engine; findings, report and totals out."""
    from stack.hipify.scan import gc_paused

    with gc_paused():  # the runner is short-lived and keeps nothing cyclic
        return _scan(params, ctx)


def _scan(params: dict[str, Any], ctx: RunContext) -> RunResult:
    from stack.hipify.report import markdown_report
    from stack.hipify.scan import scan_tree

    started = time.monotonic()
    # The orchestrator gives each project a cache that outlives jobs (ctx.cache_dir);
    # no parameter names one: a team must not reach another's findings.
    cache_dir = str(ctx.cache_dir) if ctx.cache_dir else None
    try:
        root = ctx.source_root(params.get("path", ""))
    except ValueError as exc:
        return RunResult(status="errored", error=str(exc))
    if not root.is_dir():
        return RunResult(
            status="errored",
            error=(
                f"no source tree: {root} is not a folder "
                f"(the job's work folder must hold {SOURCE_DIR}/)"
            ),
        )
    engine = params.get("engine", "fast")
    ctx.emit.progress(1, f"reading hipify-perl's tables ({engine} engine)")

    def progress(fraction: float, message: str) -> None:
        ctx.emit.progress(5 + 85 * fraction, message)

    try:
        result = scan_tree(
            root,
            engine=engine,
            include=params.get("include", []),
            exclude=params.get("exclude", []),
            cache_dir=cache_dir,
            jobs=params.get("jobs") or None,
            progress=progress,
            vendored=params.get("vendored", []),
            not_vendored=params.get("not_vendored", []),
            hazards_off=params.get("hazards_off", []),
        )
    except ToolMissing as exc:
        return RunResult(status="errored", error=str(exc))
    except ToolError as exc:
        return RunResult(status="errored", error=f"{type(exc).__name__}: {exc}")
    ctx.emit.progress(92, "writing findings and report")
    source = {
        "path": params.get("path", ""),
        "include": params.get("include", []),
        "exclude": params.get("exclude", []),
        "vendored": params.get("vendored", []),
        "not_vendored": params.get("not_vendored", []),
        "hazards_off": params.get("hazards_off", []),
    }
    summary = dict(result.summary)
    summary["engine"] = engine
    summary["tool"] = result.tables.describe()
    summary["incremental"] = {
        "examined": result.examined,
        "cached": result.cached,
        "duplicates": result.duplicates,
        "totals": result.totals_from,
        "cache": cache_dir is not None,
    }
    summary["timings_s"] = {k: round(v, 3) for k, v in result.timings.items()}
    summary["seconds"] = round(time.monotonic() - started, 3)
    artifacts = [
        ctx.write_artifact(
            "hipify/findings.json",
            result.findings_json({"source": source}),
            "application/json",
            "per-file findings of the scan (docs/hipify.md describes the shape)",
        ),
        ctx.write_artifact(
            "hipify/files.json",
            json.dumps({"schema": FILES_SCHEMA, "files": result.rows()}, separators=(",", ":")),
            "application/json",
            "per-file counts without the warnings (what the porting report's file table reads)",
        ),
        ctx.write_artifact(
            "hipify/report.md",
            markdown_report(result),
            "text/markdown; charset=utf-8",
            "the porting assessment as Markdown",
        ),
    ]
    ctx.emit.log(
        f"{result.examined} files examined, {result.cached} from the cache; "
        f"{summary['totals']['warnings']} warnings"
    )
    return RunResult(
        status="succeeded",
        measurements=measurements_for(summary),
        summary=summary,
        artifacts=artifacts,
    )
