"""The compile-check kind: does the hipified code compile for each target GPU architecture?

hipcc compiles HIP for AMD targets without a GPU (``--offload-arch=gfx942 -c``),
so this runs anywhere hipcc is installed. Each source is compiled once per
target, in parallel; clang's diagnostics become (file, line, column, severity,
message) records so the portal can link each one to its line. The job fails
(the tool ran and said no) when any file fails for any target.

Input, first found: ``WORK/hipified.tar.gz`` (a hipify-convert artifact), else
``WORK/src`` translated here with hipify-perl (``hipify: true``, the default)
or taken as HIP already (``hipify: false``).
"""

from __future__ import annotations

import functools
import json
import os
import re
import tempfile
import time
from pathlib import Path
from typing import Any

from stack.hipify.schemas import (
    COMPILE_CHECK_PARAMS,
    HIPCC_HINT,
    HIPCC_OPTION_TEXT,
    HIPIFY_PERL_HINT,
)
from stack.kinds.base import Cap, Kind, ProjectFact, RoadmapTask
from stack.runtime import Measurement, RunContext, RunResult
from stack.tools import ToolError, ToolMissing, ToolTimeout, run_tool, which

KIND = Kind(
    name="compile-check",
    title="HIP compile check",
    description=(
        "Compiles each source of the hipified tree with hipcc --offload-arch for every "
        "target architecture (no GPU needed); compiler diagnostics parsed into file, line, "
        "column, severity and message; pass/fail per file and per target."
    ),
    params_schema=COMPILE_CHECK_PARAMS,
    default_timeout_s=7200,
    runner="stack.kinds.compile_check:run",
    takes_source=True,
    phases=(2,),
    roadmap_tasks=(
        RoadmapTask.DEV_ENVIRONMENT,
        RoadmapTask.PORT_KERNELS,
    ),
    install_hints={"hipify-perl": HIPIFY_PERL_HINT, "hipcc": HIPCC_HINT},
    param_caps={"file_timeout_s": Cap.RUN_SECONDS, "jobs": Cap.CPUS},
    # A project says which GPUs it is ported for: compile for their architectures.
    project_defaults={"targets": ProjectFact.COMPILE_TARGETS},
)


SOURCE_EXTENSIONS = (".hip", ".cu", ".cpp", ".cc", ".cxx", ".c")
# hipcc treats these as HIP only when told: CUDA sources keep their names after hipify.
HIP_LANGUAGE_EXTENSIONS = (".cu", ".cuh")


class UnsafeArgument(ValueError):
    """An argument hipcc would hand to a shell, or read as one of its own options."""


# What hipcc.pl leaves unescaped: `s/[^-a-zA-Z0-9_=+,.\/]/\\$&/g` is skipped for an
# argument ending in .a or .lo (static libraries, run through `ar xv` in backticks) or
# starting with @ (response files); the argument after -o goes in double quotes only.
# Every argument but a source file is held to these characters, where no shell or quoting
# matters; a source file may hold others (hipcc escapes it) but not the rest of the rules.
_PLAIN_ARGUMENT = re.compile(r"[A-Za-z0-9_.,+=:/-]+")


def hipcc_problem(arg: str, source: bool = False) -> str | None:
    """Why this argument must not reach hipcc (None: it may).

    The last guard of the shell hole: the schema and the runner refuse bad flags and
    folders before, this holds whatever else becomes an argument (the tree's own path, a
    folder or file name of the upload, a target).
    """
    if any(ord(c) < 0x20 or c == "\x7f" for c in arg):
        return "it holds a control character"
    if arg.strip().lower().endswith((".a", ".lo")):
        return "it ends in .a or .lo, which hipcc passes to a shell unescaped"
    if arg.startswith("@"):
        return "it starts with @, which hipcc reads as a response file"
    if found := [text for text in HIPCC_OPTION_TEXT if text in arg]:
        return f"it holds {found[0]!r}, which hipcc reads as its own option"
    if not source and not _PLAIN_ARGUMENT.fullmatch(arg):
        return "it holds a character hipcc would not escape for its shell"
    return None


def hipcc_argv(
    hipcc: str,
    source: str,
    target: str,
    output: str,
    include_dirs: list[str],
    extra_flags: list[str],
) -> list[str]:
    """The hipcc command line for one (file, target); UnsafeArgument if any part of it is
    one hipcc would run through its shell."""
    argv = [f"--offload-arch={target}", "-c"]
    for folder in include_dirs:
        argv += ["-I", folder]
    argv += extra_flags
    if source.lower().endswith(HIP_LANGUAGE_EXTENSIONS):
        argv += ["-x", "hip"]
    # The source is an absolute path, so never an option (a file named "-o=x.cu" stays a
    # file). Not "--": hipcc's wrapper puts "-x hip" right before each .hip/.cu file it sees,
    # which after a "--" clang would take for two more files.
    assert os.path.isabs(source), source
    for arg in [*argv, "-o", output]:
        if problem := hipcc_problem(arg):
            raise UnsafeArgument(f"hipcc argument {arg!r} refused: {problem}")
    if problem := hipcc_problem(source, source=True):
        raise UnsafeArgument(f"source {source!r} not passed to hipcc: {problem}")
    return [hipcc, *argv, source, "-o", output]


def refused_flags(flags: list[str]) -> list[str]:
    """The flags outside the allowlist (the server refuses them at submit; checked again
    here, for a runner started some other way)."""
    from stack.hipify.schemas import COMPILE_FLAG_PATTERN

    return [flag for flag in flags if not re.fullmatch(COMPILE_FLAG_PATTERN, flag)]


def refused_folders(params: dict[str, Any]) -> list[str]:
    """``field: 'folder'`` for each folder parameter hipcc could not be handed safely (the
    schema refuses them at submit; checked again here, for a runner started some other way)."""
    from stack.hipify.schemas import TREE_FOLDER_PATTERN

    named = [("path", params.get("path", ""))]
    named += [("include_dirs", folder) for folder in params.get("include_dirs", [])]
    return [
        f"{field}: {folder!r}"
        for field, folder in named
        if not re.fullmatch(TREE_FOLDER_PATTERN, folder)
    ]


def compile_env(home: str) -> dict[str, str]:
    """hipcc's environment: a writable HOME and TMPDIR, and the AMD platform even beside nvcc."""
    env = dict(os.environ)
    env["HOME"] = home
    env["TMPDIR"] = home
    env["HIP_PLATFORM"] = "amd"
    return env


def _prepare_tree(params: dict[str, Any], ctx: RunContext, tmp: Path) -> tuple[Path, str]:
    from stack.hipify.convert import copy_tree, extract_tar_safely, hipify_tree
    from stack.hipify.scan import collect_files

    tarball = ctx.work / "hipified.tar.gz"
    if tarball.is_file():
        ctx.emit.progress(2, "unpacking hipified.tar.gz")
        tree = extract_tar_safely(tarball, tmp / "unpacked")
        sub = params.get("path", "")
        return (tree / sub if sub else tree), "hipified.tar.gz"
    root = ctx.source_root(params.get("path", ""))
    if not root.is_dir():
        raise FileNotFoundError(f"no input: neither {tarball} nor the folder {root}")
    if not params.get("hipify", True):
        return root, "src (taken as HIP)"
    ctx.emit.progress(2, "translating src with hipify-perl")
    files = collect_files(root)
    dest = tmp / "hipified"
    if files:
        conversion = hipify_tree(root, dest, files, jobs=params.get("jobs") or None)
        if conversion.failures:
            # they are compiled as CUDA: unsaid, their errors would pass for porting work
            ctx.emit.log(
                f"hipify-perl did not translate {len(conversion.failures)} files, compiled "
                "untranslated: " + ", ".join(conversion.failures[:20]),
                level="warning",
            )
    else:
        copy_tree(root, dest)
    return dest, "src (translated by hipify-perl here)"


def run(params: dict[str, Any], ctx: RunContext) -> RunResult:
    """Compile every source for every target; diagnostics, pass/fail per file and target."""
    from concurrent.futures import ThreadPoolExecutor

    from stack.hipify.diagnostics import parse_clang_diagnostics
    from stack.hipify.examine import usable_cpus
    from stack.hipify.scan import collect_files

    hipcc = which("hipcc")
    if hipcc is None:
        return RunResult(status="errored", error=str(ToolMissing("hipcc")))
    targets: list[str] = list(params.get("targets") or ["gfx942"])
    extra_flags = list(params.get("extra_flags", []))
    if refused := refused_flags(extra_flags):
        return RunResult(
            status="errored",
            error="extra_flags: not allowed: " + " ".join(refused)[:500],
        )
    if refused := refused_folders(params):
        from stack.hipify.schemas import TREE_FOLDER_MESSAGE

        return RunResult(
            status="errored", error=("; ".join(refused))[:500] + " " + TREE_FOLDER_MESSAGE
        )
    timeout = float(params.get("file_timeout_s", 300))
    jobs = params.get("jobs") or usable_cpus()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rocpath-compile-") as tmp_name:
        tmp = Path(tmp_name)
        try:
            tree, origin = _prepare_tree(params, ctx, tmp)
        except (FileNotFoundError, ValueError, ToolMissing) as exc:
            return RunResult(status="errored", error=str(exc))
        tree_str = str(tree)
        files = collect_files(
            tree, params.get("include", []), params.get("exclude", []), SOURCE_EXTENSIONS
        )
        skipped = {rel: why for rel in files if (why := hipcc_problem(str(tree / rel), True))}
        if skipped:
            files = [rel for rel in files if rel not in skipped]
            ctx.emit.log(
                f"{len(skipped)} files not compiled, their names are ones hipcc would run "
                "through its shell or read as its options: "
                + "; ".join(f"{rel!r} ({why})" for rel, why in list(skipped.items())[:20]),
                level="warning",
            )
        include_dirs = [tree_str] + [
            str(tree / d)
            for d in params.get("include_dirs", [])
            if (tree / d).is_dir() and (tree / d).resolve().is_relative_to(tree.resolve())
        ]
        home = tmp / "home"
        (home / "objects").mkdir(parents=True)
        env = compile_env(str(home))
        pairs = ((rel, target) for target in targets for rel in files)
        tasks = [(i, rel, target) for i, (rel, target) in enumerate(pairs)]

        def compile_one(task: tuple[int, str, str]) -> dict[str, Any]:
            number, rel, target = task
            obj = home / "objects" / f"{number}.o"
            argv = hipcc_argv(hipcc, str(tree / rel), target, str(obj), include_dirs, extra_flags)
            t0 = time.monotonic()
            try:
                run = run_tool(argv, timeout, env=env, cwd=tree_str)
                rc, stderr = run.returncode, run.stderr
            except ToolTimeout as exc:
                rc, stderr = -1, (exc.stderr or "") + f"\nrocpath: timed out after {timeout:g} s"
            parsed = parse_clang_diagnostics(stderr, tree_str)
            obj.unlink(missing_ok=True)
            return {
                "file": rel,
                "target": target,
                "ok": rc == 0,
                "returncode": rc,
                "seconds": round(time.monotonic() - t0, 3),
                "diagnostics": parsed["diagnostics"],
                "counts": parsed["counts"],
                "stderr": stderr,
                "argv": [os.path.basename(argv[0]), *[a.replace(tree_str, ".") for a in argv[1:]]],
            }

        results: list[dict[str, Any]] = []
        ctx.emit.progress(
            10, f"{len(tasks)} compilations ({len(files)} files x {len(targets)} targets)"
        )
        try:
            with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
                for i, result in enumerate(pool.map(compile_one, tasks), 1):
                    results.append(result)
                    ctx.emit.progress(
                        10 + 85 * i / max(1, len(tasks)), f"{result['file']} ({result['target']})"
                    )
        except (ToolError, UnsafeArgument) as exc:
            return RunResult(status="errored", error=str(exc)[:1000])
    return _result(ctx, results, files, targets, origin, started, skipped)


def _result(
    ctx: RunContext,
    results: list[dict[str, Any]],
    files: list[str],
    targets: list[str],
    origin: str,
    started: float,
    skipped: dict[str, str],
) -> RunResult:
    per_target: dict[str, dict[str, Any]] = {
        t: {"passed": 0, "failed": 0, "errors": 0, "warnings": 0, "seconds": 0.0} for t in targets
    }
    per_file: dict[str, dict[str, str]] = {rel: {} for rel in files}
    diagnostics = []
    log = []
    for r in results:
        t = per_target[r["target"]]
        t["passed" if r["ok"] else "failed"] += 1
        t["errors"] += r["counts"]["error"] + r["counts"]["fatal error"]
        t["warnings"] += r["counts"]["warning"]
        t["seconds"] += r["seconds"]
        per_file[r["file"]][r["target"]] = "pass" if r["ok"] else "fail"
        for d in r["diagnostics"]:
            diagnostics.append({**d, "compiled": r["file"], "target": d["target"] or r["target"]})
        if not r["ok"] or r["stderr"].strip():
            log.append(f"$ {' '.join(r['argv'])}\n# exit status {r['returncode']}\n{r['stderr']}\n")
    for t in per_target.values():
        t["seconds"] = round(t["seconds"], 3)
    failed_files = sorted(rel for rel, st in per_file.items() if "fail" in st.values())
    errors = [d for d in diagnostics if d["severity"] in ("error", "fatal error")]
    document = {
        "schema": "rocpath.compile-check/1",
        "input": origin,
        "targets": targets,
        "per_target": per_target,
        "files": [{"path": rel, "targets": st} for rel, st in per_file.items()],
        "diagnostics": diagnostics,
        "skipped": [{"path": rel, "why": why} for rel, why in skipped.items()],
    }
    artifacts = [
        ctx.write_artifact(
            "compile/diagnostics.json",
            json.dumps(document, indent=1),
            "application/json",
            "pass/fail per file and target, and every compiler diagnostic",
        )
    ]
    if log:
        artifacts.append(
            ctx.write_artifact(
                "compile/hipcc.log", "\n".join(log), "text/plain; charset=utf-8", "hipcc's output"
            )
        )
    measurements = []
    for target, t in per_target.items():
        for metric, unit, better in (
            ("files_passed", "files", "higher"),
            ("files_failed", "files", "lower"),
            ("errors", "diagnostics", "lower"),
            ("warnings", "diagnostics", "lower"),
        ):
            key = metric.replace("files_", "")
            measurements.append(
                Measurement(
                    "compile-check",
                    metric,
                    unit,
                    t[key],
                    [t[key]],
                    case={"target": target},
                    better=better,
                )
            )
    summary = {
        "input": origin,
        "targets": targets,
        "files": len(files),
        "per_target": per_target,
        "failed_files": failed_files[:200],
        "skipped_files": sorted(skipped)[:200],
        "first_errors": [
            {k: d[k] for k in ("file", "line", "column", "severity", "message", "target")}
            for d in errors[:50]
        ],
        "seconds": round(time.monotonic() - started, 3),
    }
    if not files:
        ctx.emit.log("no source files to compile", "warning")
    status = "failed" if failed_files else "succeeded"
    error = None
    if failed_files:
        error = f"{len(failed_files)} of {len(files)} files failed to compile for " + ", ".join(
            t for t, v in per_target.items() if v["failed"]
        )
    return RunResult(
        status=status, measurements=measurements, summary=summary, artifacts=artifacts, error=error
    )


def hipcc_target_problem(target: str, hipcc: str | None = None) -> str | None:
    """Why this host's hipcc cannot compile for ``target`` (None: it can).

    Asked, not assumed from a version table: hipcc preprocesses an empty HIP file for
    the target (1-3 s), once per hipcc (path and modification time) and target in a
    process. Debian bookworm's hipcc 5.2.3 refuses gfx942 ("invalid target ID"); the
    debian job image's (trixie, 5.7.1) takes gfx942 and gfx90a.
    """
    hipcc = hipcc or which("hipcc")
    if hipcc is None:
        return "hipcc is not installed on this host"
    try:
        stamp = os.stat(hipcc).st_mtime_ns
    except OSError as exc:
        return f"hipcc at {hipcc} cannot be read: {exc.strerror}"
    return _probe_target(hipcc, stamp, target)


@functools.lru_cache(maxsize=64)
def _probe_target(hipcc: str, _stamp: int, target: str) -> str | None:
    with tempfile.TemporaryDirectory(prefix="rocpath-hipcc-probe-") as home:
        source = Path(home) / "probe.hip"
        source.write_text("")
        try:
            result = run_tool(
                [
                    hipcc,
                    f"--offload-arch={target}",
                    "-x",
                    "hip",
                    "-E",
                    str(source),
                    "-o",
                    os.devnull,
                ],
                timeout=60,
                env=compile_env(home),
            )
        except (ToolError, ToolTimeout, OSError) as exc:
            return f"hipcc could not be asked about {target}: {exc}"
        if result.returncode == 0:
            return None
        first = next((line for line in (result.stderr or "").splitlines() if line.strip()), "")
        return f"this host's hipcc does not know {target} ({first.strip()[:200]})"
