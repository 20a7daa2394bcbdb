"""The tune-gemm kind's work: tune the given GEMMs, keep the tuned file, time before and after.

TunableOp runs in a child process (stack/tune/driver.py); its results file becomes the
artifact ``tune/tunableop_results.csv`` and ``summary.tuned_file`` (validators, GPU
architecture, the registry's key), which the server registers (jobs: TunedGemmFile) so
later jobs can run with it. hipblaslt-bench runs ``--algo_method all`` per shape and its
winners are the artifact ``tune/hipblaslt-winners.json``. Nothing is faked where the tool
cannot run: on the CPU TunableOp is inert and the job fails saying so; without
hipblaslt-bench (no ROCm here) it fails naming where to get it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from stack.blas.blas_tools import HIPBLASLT, search_dirs
from stack.blas.stats import ratio_of_medians
from stack.child import DRIVER_FILE, failure_said
from stack.contract import FAILED, SUCCEEDED
from stack.kinds.tune_gemm import KIND as TUNE_GEMM
from stack.parsers import ParseError
from stack.runtime import Measurement, RunContext, RunResult
from stack.tools import ToolMissing, ToolTimeout, run_tool, which
from stack.tune import files, registry
from stack.tune.schema import TUNABLE_PRECISIONS, TUNABLEOP
from stack.tune.shapes import ShapesError, count_shapes, gemms_from_tunableop, shapes_from_rows

BENCHMARK = TUNE_GEMM.name
OUT_DIR = "tune"
LOG_MAX = 512 * 1024


def _shapes(params: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """Every distinct GEMM to tune (BLAS form rows), and the untuned file's lines left out."""
    gemms = shapes_from_rows(params.get("shapes") or [])
    notes = []
    if params.get("untuned"):
        found = gemms_from_tunableop(params["untuned"])
        if not found:
            raise ShapesError("untuned: no TunableOp GEMM line in the text")
        gemms += found
    rows = []
    for row in count_shapes(gemms):
        if row["precision"] not in TUNABLE_PRECISIONS:
            notes.append(f"{row['precision']} is not a precision TunableOp tunes here; left out")
            continue
        rows.append(row)
    if not rows:
        raise ShapesError("shapes: give at least one GEMM (shapes, or an untuned file's text)")
    return rows, notes


def _child_env(params: dict[str, Any]) -> dict[str, str]:
    """This environment without PYTORCH_TUNABLEOP_* (the driver drives TunableOp through its
    API), with the stack importable and TunableOp's verbosity as asked."""
    import stack

    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTORCH_TUNABLEOP_")}
    root = str(Path(stack.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    if params.get("verbose"):
        env["PYTORCH_TUNABLEOP_VERBOSE"] = str(params["verbose"])
    return env


def run(params: dict[str, Any], ctx: RunContext) -> RunResult:
    """Tune as the params ask; see docs/profiling.md."""
    started = time.monotonic()
    try:
        rows, notes = _shapes(params)
    except ShapesError as exc:
        return RunResult(status="errored", error=str(exc))
    environment, artifacts, env_error = None, [], None
    if params.get("environment", True):
        ctx.emit.progress(1, "fingerprinting the machine (probe)")
        from stack.blas.setup import fingerprint

        environment, artifacts, env_error = fingerprint(ctx)
    if params["method"] == TUNABLEOP:
        result = _tunableop(params, ctx, rows, artifacts)
    else:
        result = _hipblaslt(params, ctx, rows, artifacts)
    result.environment = environment
    result.summary.update(
        shapes=rows, notes=notes, environment_error=env_error,
        seconds=round(time.monotonic() - started, 3),
    )  # fmt: skip
    return result


def _speedup(before: list[float], after: list[float]) -> dict[str, Any]:
    """before / after of the medians (> 1: the tuned file is faster), with its interval."""
    ratio = ratio_of_medians(after, before)  # time after / before
    if ratio.value is None:
        return {"speedup": None, "low": None, "high": None}
    return {
        "speedup": round(1.0 / ratio.value, 4),
        "low": None if ratio.high is None else round(1.0 / ratio.high, 4),
        "high": None if ratio.low is None else round(1.0 / ratio.low, 4),
    }


def gap_to_best(timings: list[dict[str, Any]]) -> dict[str, Any]:
    """How far the tuned choice is from the fastest option measured (the default or the
    tuned one), in % of the fastest, for the worst shape: what the roadmap's "tuned within
    10 %" reads (0 when tuning never lost)."""
    gaps = []
    for timing in timings:
        if timing["before"] and timing["after"]:
            before = statistics.median(timing["before"])
            after = statistics.median(timing["after"])
            gaps.append(max(0.0, after / min(before, after) - 1.0) * 100.0)
    if not gaps:
        return {"gap_to_best_pct": None, "why_not": "nothing was timed before and after"}
    return {"gap_to_best_pct": round(max(gaps), 2)}


def _tunableop(
    params: dict[str, Any], ctx: RunContext, rows: list[dict[str, Any]], artifacts: list
) -> RunResult:
    if importlib.util.find_spec("torch") is None:
        return RunResult(status="errored", artifacts=artifacts, error=str(ToolMissing("torch")))
    scratch = Path(tempfile.mkdtemp(prefix="rocpath-tune-"))
    try:
        spec = {
            **{k: params[k] for k in (
                "max_tuning_duration_ms", "max_tuning_iterations", "rotating_buffer_mb",
                "measure", "rounds", "warmup_s", "min_reps", "max_reps", "target_cv",
                "case_budget_s", "min_sampling_s", "gpu_index", "seed",
            )},
            "shapes": rows,
            "out_dir": str(scratch),
        }  # fmt: skip
        spec_path = scratch / "spec.json"
        spec_path.write_text(json.dumps(spec), encoding="utf-8")
        ctx.emit.progress(10, f"tuning {len(rows)} GEMM shape(s) with TunableOp")
        argv = [sys.executable, "-m", "stack.tune.driver", str(spec_path)]
        try:
            done = run_tool(argv, params["driver_timeout_s"], env=_child_env(params), cwd=scratch)
        except ToolTimeout as exc:
            return RunResult(
                status=FAILED,
                artifacts=artifacts,
                error=f"tuning ran past driver_timeout_s ({exc.timeout:g} s)",
            )
        log = (done.stdout + done.stderr)[-LOG_MAX:]
        if log.strip():
            artifacts.append(
                ctx.write_artifact(
                    f"{OUT_DIR}/tunableop.log", log, "text/plain; charset=utf-8",
                    "TunableOp's output while tuning (PYTORCH_TUNABLEOP_VERBOSE)",
                )
            )  # fmt: skip
        try:
            report = json.loads((scratch / DRIVER_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            report = {
                "ok": False,
                "error": failure_said(done.stderr)
                or f"the tuning process exited {done.returncode}",
            }
        if not report.get("ok"):
            return RunResult(
                status=FAILED, artifacts=artifacts, error=f"tuning failed: {report.get('error')}"
            )
        summary: dict[str, Any] = {"method": TUNABLEOP, "torch_version": report["torch_version"]}
        if report.get("inert"):
            summary["inert"] = report["inert"]
            return RunResult(
                status=FAILED, artifacts=artifacts, summary=summary, error=report["inert"]
            )
        return _tunableop_result(params, ctx, report, scratch, summary, artifacts, log)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _tunableop_result(
    params: dict[str, Any],
    ctx: RunContext,
    report: dict[str, Any],
    scratch: Path,
    summary: dict[str, Any],
    artifacts: list,
    log: str = "",
) -> RunResult:
    device = report.get("device") or {}
    backend = device.get("torch_backend") or "cuda"
    text = ""
    if report.get("tuned_file"):
        text = (scratch / report["tuned_file"]).read_text(encoding="utf-8")
    tuned = files.parse_tunableop_file(text)
    validators = tuned.validators or report.get("validators") or {}
    if text:
        artifacts.append(
            ctx.write_artifact(
                f"{OUT_DIR}/{registry.FILE_NAME}", text, "text/csv",
                "TunableOp's results file: later jobs run with it (PYTORCH_TUNABLEOP_FILENAME)",
            )
        )  # fmt: skip
    single = files.single_candidate_note(tuned, backend, report.get("torch_version"), log)
    summary.update(
        device=device,
        entries=[e.as_dict() for e in tuned.entries],
        solutions=sorted(tuned.solutions),
        single_candidate=single is not None,
        candidates=files.candidates_from_log(log),
        single_candidate_note=single,
        skipped=report.get("skipped") or [],
        tuned_file=None
        if not text
        else {
            "artifact": f"{OUT_DIR}/{registry.FILE_NAME}",
            "method": TUNABLEOP,
            "validators": validators,
            "gpu_arch": device.get("arch"),
            "gpu_name": device.get("name"),
            "backend": backend,
            "entries": len(tuned.entries),
            "key": registry.registry_key(validators, device.get("arch")),
        },
    )
    measurements: list[Measurement] = []
    speedups = []
    for timing in report.get("timings") or []:
        case = {"method": TUNABLEOP, "shape": timing["shape"], "device": device.get("name") or ""}
        for side in ("before", "after"):
            samples = [s * 1e6 for s in timing[side]]
            if samples:
                ordered = sorted(samples)
                median = ordered[len(ordered) // 2]
                measurements.append(
                    Measurement(
                        BENCHMARK, "gemm_time", "us", median, samples[:1000],
                        {**case, "tuned": side == "after"}, "lower",
                    )
                )  # fmt: skip
        found = _speedup(timing["before"], timing["after"])
        speedups.append({"shape": timing["shape"], **found})
        if found["speedup"] is not None:
            measurements.append(
                Measurement(BENCHMARK, "speedup", "x", found["speedup"], [], case, "higher")
            )
    summary["speedups"] = speedups
    summary.update(gap_to_best(report.get("timings") or []))
    ctx.emit.progress(100, "done")
    return RunResult(
        status=SUCCEEDED, measurements=measurements, summary=summary, artifacts=artifacts
    )


def _hipblaslt(
    params: dict[str, Any], ctx: RunContext, rows: list[dict[str, Any]], artifacts: list
) -> RunResult:
    path = which(HIPBLASLT, search_dirs(HIPBLASLT))
    summary: dict[str, Any] = {"method": HIPBLASLT}
    if path is None:
        return RunResult(
            status=FAILED, artifacts=artifacts, summary=summary, error=str(ToolMissing(HIPBLASLT))
        )
    winners = []
    for i, gemm in enumerate(shapes_from_rows(rows)):
        pct = 10 + 80 * i / len(rows)
        ctx.emit.progress(pct, f"hipblaslt-bench --algo_method all: {gemm.label()}")
        argv = files.hipblaslt_tune_argv(
            gemm,
            iters=params["tool_iters"],
            cold_iters=params["tool_cold_iters"],
            device=params["gpu_index"],
            rotating_mb=params["rotating_buffer_mb"],
        )
        argv[0] = path
        try:
            done = run_tool(argv, params["tool_timeout_s"])
            winners.append({"shape": gemm.label(), **files.hipblaslt_winner(done.stdout)})
        except ToolTimeout as exc:
            winners.append({"shape": gemm.label(), "error": f"timed out ({exc.timeout:g} s)"})
        except ParseError as exc:
            winners.append({"shape": gemm.label(), "error": str(exc)})
    artifacts.append(
        ctx.write_artifact(
            f"{OUT_DIR}/hipblaslt-winners.json", json.dumps(winners, indent=1),
            "application/json", "hipblaslt-bench --algo_method all: each shape's fastest solution",
        )
    )  # fmt: skip
    summary["winners"] = winners
    summary["why_not"] = "hipblaslt-bench names each shape's winner; it times no before/after"
    ok = [w for w in winners if "error" not in w]
    if not ok:
        return RunResult(
            status=FAILED, artifacts=artifacts, summary=summary,
            error="hipblaslt-bench gave no winner: " + "; ".join(w["error"] for w in winners),
        )  # fmt: skip
    return RunResult(status=SUCCEEDED, artifacts=artifacts, summary=summary)
