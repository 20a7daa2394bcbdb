"""The profile kind's work: run the workload under each profiler that can run here, and
turn what they wrote into one normalised profile.

First run: the PyTorch profiler (CPU activity everywhere, the GPU's where PyTorch sees
one), which also says which GPU ran the workload. Then, on that GPU's vendor only,
Nsight Compute (NVIDIA) or rocprofv3 (AMD) over the same workload in a fresh process.
A profiler that cannot run is no failure: the summary says which did not, and why. The
job fails when the workload itself fails, or when no profiler produced a profile.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import stack
from stack.causes import traceback_cause
from stack.child import DRIVER_FILE, failure_said
from stack.contract import FAILED, SUCCEEDED, nesting_depth
from stack.profile import ncu, rocprof, torch_profiler
from stack.profile.driver import TRACE_FILE
from stack.profile.normalise import (
    KernelStat,
    kernel_measurements,
    step_measurement,
    top_kernels,
)
from stack.profile.schema import NCU, ROCPROFV3
from stack.runtime import Measurement, RunContext, RunResult
from stack.tools import ToolMissing, ToolRun, ToolTimeout, run_tool, which
from stack.tune.shapes import count_shapes, gemms_from_trace

TORCH = "torch"
OUT_DIR = "profile"
MAX_TRACE_READ = 1024 * 1024 * 1024  # a trace larger than this is kept out, not parsed
WORKLOAD_CASE = {
    "gemm": ("m", "n", "k", "dtype", "iterations"),
    "transformer": ("batch", "seq_len", "d_model", "heads", "dtype", "iterations"),
    "script": (),
}


class BadParams(ValueError):
    """Parameters the schema cannot say are wrong together (heads and d_model, a script)."""


def _script_path(params: dict[str, Any], ctx: RunContext) -> Path:
    script = params.get("script") or ""
    if not script:
        raise BadParams("script: the script workload needs a .py file of the source tree")
    try:
        path = ctx.source_root(script)
    except ValueError as exc:
        raise BadParams(f"script: {exc}") from None
    if path.suffix != ".py":
        raise BadParams(f"script: {script!r} is not a .py file")
    if not path.is_file():
        raise BadParams(f"script: {script!r} is not a file of the source tree")
    return path


def workload_case(params: dict[str, Any]) -> dict[str, Any]:
    """What identifies the workload in every measurement's case."""
    workload = params["workload"]
    case: dict[str, Any] = {"workload": workload}
    case.update({key: params[key] for key in WORKLOAD_CASE[workload]})
    if workload == "script":
        case["script"] = params["script"]
        if params.get("script_args"):
            case["args"] = " ".join(params["script_args"])[:200]
    return case


def _child_env() -> dict[str, str]:
    """This environment, with the stack importable in the child whatever its folder."""
    env = dict(os.environ)
    root = str(Path(stack.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env


def _tail(text: str, lines: int = 6) -> str:
    kept = [line for line in text.splitlines() if line.strip()][-lines:]
    return "\n".join(kept)[-1500:]


def workload_failure(report: dict[str, Any], run: ToolRun) -> str:
    """Why the workload's child failed, its cause first: its report's error, else the
    exception its traceback ends with (a child that could not even write its report, as
    when the sandbox's /tmp is full), else its stderr's last lines (a crash, not Python's)."""
    return (
        report.get("error")
        or failure_said(run.stderr)
        or traceback_cause(run.stderr)
        or _tail(run.stderr)
        or f"exit status {run.returncode}"
    )


class Session:
    """One job's runs of the driver, in a scratch folder that goes away with the job."""

    def __init__(self, params: dict[str, Any], ctx: RunContext, script: Path | None) -> None:
        self.params = params
        self.ctx = ctx
        self.script = script
        self.scratch = Path(tempfile.mkdtemp(prefix="rocpath-profile-"))
        self.env = _child_env()

    def spec(self, name: str, **extra: Any) -> tuple[Path, Path]:
        """Write a driver spec for one run; return its path and the run's folder."""
        folder = self.scratch / name
        folder.mkdir()
        spec = {
            key: self.params[key]
            for key in (
                "workload", "m", "n", "k", "dtype", "batch", "seq_len", "d_model", "heads",
                "iterations", "warmup", "device", "script_args", "record_shapes",
            )
        }  # fmt: skip
        spec.update(out_dir=str(folder), **extra)
        if self.script is not None:
            spec.update(script=str(self.script), cwd=str(self.ctx.source_root()))
        path = folder / "spec.json"
        path.write_text(json.dumps(spec), encoding="utf-8")
        return path, folder

    def target(self, spec_path: Path) -> list[str]:
        """The driver's argv, with this runner's interpreter (the sandbox's Python)."""
        return [sys.executable, "-m", "stack.profile.driver", str(spec_path)]

    def run(self, argv: list[str], timeout: float) -> Any:
        cwd = self.ctx.source_root() if self.script is not None else self.scratch
        return run_tool(argv, timeout, env=self.env, cwd=cwd)


def _read_report(folder: Path) -> dict[str, Any]:
    path = folder / DRIVER_FILE
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return report if isinstance(report, dict) else {}


def _read_trace(path: Path) -> tuple[Any, str | None]:
    """The trace document, or None and why not (too large or deep to read safely)."""
    try:
        size = path.stat().st_size
    except OSError:
        return None, "the PyTorch profiler wrote no trace"
    if size > MAX_TRACE_READ:
        return None, f"the trace is {size} bytes, more than this runner reads"
    raw = path.read_bytes()
    if nesting_depth(raw) > 32:
        return None, "the trace nests too deeply to read"
    try:
        return json.loads(raw), None
    except (ValueError, RecursionError) as exc:
        return None, f"the trace is not JSON: {exc}"


def run(params: dict[str, Any], ctx: RunContext) -> RunResult:
    """Profile the workload as the params ask; see docs/profiling.md."""
    started = time.monotonic()
    try:
        script = _script_path(params, ctx) if params["workload"] == "script" else None
        if params["workload"] == "transformer" and params["d_model"] % params["heads"]:
            raise BadParams(f"heads: {params['heads']} does not divide d_model {params['d_model']}")
    except BadParams as exc:
        return RunResult(status="errored", error=str(exc))
    if importlib.util.find_spec("torch") is None:
        return RunResult(status="errored", error=str(ToolMissing(TORCH)))

    session = Session(params, ctx, script)
    try:
        return _profile(session, started)
    finally:
        shutil.rmtree(session.scratch, ignore_errors=True)


def _profile(session: Session, started: float) -> RunResult:
    params, ctx = session.params, session.ctx
    environment, artifacts, env_error = None, [], None
    if params.get("environment", True):
        ctx.emit.progress(1, "fingerprinting the machine (probe)")
        from stack.blas.setup import fingerprint  # the probe's code, as blas-bench takes it

        environment, artifacts, env_error = fingerprint(ctx)
    case = workload_case(params)
    profilers: dict[str, dict[str, Any]] = {}
    tables: dict[str, list[dict[str, Any]]] = {}
    measurements: list[Measurement] = []
    wanted = params["profilers"]
    top = params["top"]

    def record(name: str, rows: list[KernelStat], level: str, seconds: float) -> None:
        kernels, total = top_kernels(rows, top)
        profilers[name] = {
            "ran": True,
            "level": level,
            "kernels": len({r.name for r in rows}),
            "total_ns": round(total, 1),
            "seconds": round(seconds, 3),
        }
        tables[name] = [k.as_dict() for k in kernels]
        measurements.extend(kernel_measurements(kernels, {**case, "level": level}, name))

    # 1. The workload itself, under the PyTorch profiler when asked: it also tells which
    # device ran it, which decides the vendor's profiler.
    ctx.emit.progress(5, f"running the {params['workload']} workload" + (
        " under the PyTorch profiler" if TORCH in wanted else ""))  # fmt: skip
    spec_path, folder = session.spec(TORCH, torch_profiler=TORCH in wanted)
    try:
        first = session.run(session.target(spec_path), params["workload_timeout_s"])
    except ToolTimeout as exc:
        return RunResult(
            status=FAILED,
            environment=environment,
            artifacts=artifacts,
            error=f"the workload ran past workload_timeout_s ({exc.timeout:g} s)",
        )
    report = _read_report(folder)
    if not report.get("ok"):
        reason = workload_failure(report, first)
        return RunResult(
            status=FAILED,
            environment=environment,
            artifacts=artifacts,
            summary={"workload": case, "log_tail": _tail(first.stderr, 20)},
            error=f"the workload failed: {reason}",
        )
    device = report.get("device") if isinstance(report.get("device"), dict) else {}
    on_gpu = device.get("type") == "cuda"
    steps = report.get("step_times_ms") if isinstance(report.get("step_times_ms"), list) else []
    step = step_measurement(steps, {**case, "device": device.get("type") or "cpu"})
    if step is not None:
        measurements.append(step)

    trace_info: dict[str, Any] = {}
    gemm_shapes: list[dict[str, Any]] | None = None
    if TORCH in wanted:
        rows, level = [], "kernel" if on_gpu else "operator"
        document, why = _read_trace(folder / TRACE_FILE)
        if document is not None:
            if on_gpu:
                rows = torch_profiler.parse_chrome_trace(document)
            if params.get("record_shapes", True):
                gemm_shapes = count_shapes(gemms_from_trace(document))
            trimmed, cut = torch_profiler.trim_trace(document, params["trace_max_bytes"])
            text = json.dumps(trimmed)
            artifacts.append(
                ctx.write_artifact(
                    f"{OUT_DIR}/trace.json",
                    text,
                    "application/json",
                    "Chrome trace of the PyTorch profiler: open it in https://ui.perfetto.dev "
                    "or chrome://tracing" + (f" ({cut} earliest events cut)" if cut else ""),
                )
            )
            trace_info = {"path": f"{OUT_DIR}/trace.json", "events_cut": cut, "bytes": len(text)}
        else:
            trace_info = {"error": why}
        averages = (
            report.get("key_averages") if isinstance(report.get("key_averages"), list) else []
        )
        if not rows:  # the CPU, or a GPU whose kernels the trace lacks: operators' self time
            rows = torch_profiler.parse_key_averages(averages, device=on_gpu)
            level = "operator"
        record(TORCH, rows, level, first.duration_s)
    vendor = device.get("vendor")

    # 2. The vendor's profiler over the same workload, in a fresh process.
    if NCU in wanted:
        # Run first: record() marks the profiler as ran, and that must survive the merge.
        done = _run_ncu(session, ctx, vendor, artifacts, record)
        profilers[NCU] = {**profilers.get(NCU, {}), **done}
    if ROCPROFV3 in wanted:
        done = _run_rocprof(session, ctx, vendor, artifacts, record)
        profilers[ROCPROFV3] = {**profilers.get(ROCPROFV3, {}), **done}

    ctx.emit.progress(95, "writing the profile")
    profile = {
        "schema": "rocpath.profile/1",
        "workload": case,
        "device": device,
        "profilers": profilers,
        "top_kernels": tables,
    }
    artifacts.append(
        ctx.write_artifact(
            f"{OUT_DIR}/profile.json",
            json.dumps(profile, indent=1),
            "application/json",
            "the normalised profile: top kernels by time per profiler, and their counters",
        )
    )
    ran = [name for name, p in profilers.items() if p.get("ran")]
    summary = {
        **profile,
        "ran": ran,
        "unavailable": {n: p["reason"] for n, p in profilers.items() if not p.get("ran")},
        "step_time_ms": None
        if step is None
        else {"median": round(step.value, 4), "steps": len(steps)},
        "trace": trace_info,
        "gemm_shapes": gemm_shapes,
        "environment_error": env_error,
        "seconds": round(time.monotonic() - started, 3),
    }
    ctx.emit.progress(100, "done")
    if not ran:
        return RunResult(
            status=FAILED,
            environment=environment,
            measurements=measurements,
            summary=summary,
            artifacts=artifacts,
            error="no profiler could run: "
            + "; ".join(f"{n}: {r}" for n, r in summary["unavailable"].items()),
        )
    return RunResult(
        status=SUCCEEDED,
        environment=environment,
        measurements=measurements,
        summary=summary,
        artifacts=artifacts,
    )


def _unavailable(reason: str) -> dict[str, Any]:
    return {"ran": False, "reason": reason}


def _run_ncu(session: Session, ctx: RunContext, vendor: Any, artifacts: list, record: Any) -> dict:
    if vendor != "nvidia":
        return _unavailable(
            "no GPU: the workload ran on the CPU" if vendor is None
            else f"the GPU is {vendor.upper()}; Nsight Compute reads NVIDIA GPUs only"
        )  # fmt: skip
    cuda_home = os.environ.get("CUDA_HOME") or "/usr/local/cuda"
    path = which(NCU, (os.path.join(cuda_home, "bin"),))
    if path is None:
        return _unavailable(str(ToolMissing(NCU)))
    ctx.emit.progress(40, "running the workload under Nsight Compute")
    spec_path, _ = session.spec(NCU, torch_profiler=False, ranged=True)
    argv = ncu.command(
        path,
        session.target(spec_path),
        max_kernels=session.params["ncu_max_kernels"],
        from_start=session.params["workload"] == "script",
    )
    try:
        done = session.run(argv, session.params["profiler_timeout_s"])
    except ToolTimeout as exc:
        return _unavailable(f"ncu ran past profiler_timeout_s ({exc.timeout:g} s)")
    try:
        table = ncu.csv_table(done.stdout)
        rows = ncu.parse_csv(done.stdout)
    except ncu.NcuOutputError as exc:
        why = _tail(done.stdout + "\n" + done.stderr, 4)
        return _unavailable(f"{exc}; exit status {done.returncode}: {why}")
    artifacts.append(
        ctx.write_artifact(
            f"{OUT_DIR}/ncu.csv",
            table,
            "text/csv",
            "Nsight Compute's CSV, one row per launch and metric",
        )
    )
    record(NCU, rows, "kernel", done.duration_s)
    return {
        "exit_status": done.returncode,
        "command": " ".join(argv[: argv.index("--metrics") + 2]),
    }


def _run_rocprof(
    session: Session, ctx: RunContext, vendor: Any, artifacts: list, record: Any
) -> dict:
    if vendor != "amd":
        return _unavailable(
            "no GPU: the workload ran on the CPU" if vendor is None
            else f"the GPU is {vendor.upper()}; rocprofv3 traces AMD GPUs only"
        )  # fmt: skip
    path = which(ROCPROFV3)
    if path is None:
        return _unavailable(str(ToolMissing(ROCPROFV3)))
    ctx.emit.progress(70, "running the workload under rocprofv3")
    spec_path, folder = session.spec(ROCPROFV3, torch_profiler=False)
    out_dir = folder / "rocprofv3"
    argv = rocprof.command(path, session.target(spec_path), out_dir)
    try:
        done = session.run(argv, session.params["profiler_timeout_s"])
    except ToolTimeout as exc:
        return _unavailable(f"rocprofv3 ran past profiler_timeout_s ({exc.timeout:g} s)")
    rows, files = rocprof.read_outputs(out_dir)
    if not rows:
        why = _tail(done.stderr or done.stdout, 4)
        return _unavailable(
            f"rocprofv3 wrote no kernel table; exit status {done.returncode}: {why}"
        )
    for key, file in files.items():
        artifacts.append(
            ctx.write_artifact(
                f"{OUT_DIR}/rocprofv3/{file.name}",
                file.read_bytes(),
                "text/csv",
                f"rocprofv3's kernel {key} CSV",
            )
        )
    record(ROCPROFV3, rows, "kernel", done.duration_s)
    return {"exit_status": done.returncode, "command": " ".join(argv[: argv.index("--")])}
