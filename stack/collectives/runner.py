"""collective-bench's runner: one process per rank, the size sweep, the figures.

The ranks are this job's GPUs (the lease gives the job ``hardware.gpu_count`` GPUs of
one host; the executor makes them the visible ones) with the platform's backend — nccl
on CUDA builds of PyTorch, which is RCCL on ROCm builds — or, without a GPU, processes
on the CPU with gloo. Each rank is a ``python -m stack.collectives.worker`` process;
they meet on a TCP store on 127.0.0.1 (the job's network namespace is its own).
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from stack.collectives import nccl_tests, topology
from stack.collectives.formulas import OPS, algbw_gbps, bus_factor, busbw_gbps, sweep
from stack.contract import ERRORED, FAILED, SUCCEEDED
from stack.runtime import Measurement, RunContext, RunResult
from stack.tools import run_tool, which

BENCHMARK = "collective"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _platform(params: dict[str, Any]) -> dict[str, Any]:
    """GPU count, torch's backend and GPU name, asked of torch in a child process."""
    probe = (
        "import json, torch, torch.distributed as d\n"
        "n = torch.cuda.device_count() if torch.cuda.is_available() else 0\n"
        "print(json.dumps({'gpus': n, 'hip': getattr(torch.version, 'hip', None),"
        " 'cuda': torch.version.cuda, 'torch': torch.__version__,"
        " 'nccl': d.is_nccl_available(), 'gloo': d.is_gloo_available(),"
        " 'name': torch.cuda.get_device_name(0) if n else None}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=300
    )
    if done.returncode != 0:
        raise RuntimeError(f"torch could not be asked: {done.stderr.strip()[-500:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _choose(params: dict[str, Any], platform: dict[str, Any]) -> tuple[str, int, str]:
    """(backend, ranks, why) for the params on this machine."""
    wanted = params["backend"]
    gpus = platform["gpus"]
    if wanted in ("auto", "nccl") and gpus >= 1 and platform["nccl"]:
        ranks = params["ranks"] or gpus
        if ranks > gpus:
            raise ValueError(
                f"{ranks} ranks asked, {gpus} GPU(s) visible: lease more GPUs (hardware.gpu_count)"
            )
        lib = "RCCL" if platform["hip"] else "NCCL"
        return "nccl", ranks, f"{ranks} GPU(s) through {lib}"
    if wanted == "nccl":
        raise ValueError("backend nccl asked, but torch sees no GPU or has no NCCL/RCCL")
    ranks = params["ranks"] or 2
    return (
        "gloo",
        ranks,
        f"{ranks} CPU processes through gloo (no GPU: figures of the host, not of a GPU link)",
    )


def _run_ranks(ctx: RunContext, plan: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    plan_file = ctx.work / "collective-plan.json"
    plan_file.write_text(json.dumps(plan))
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "stack.collectives.worker", str(plan_file), str(rank)],
            stdout=subprocess.PIPE if rank == 0 else subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for rank in range(plan["ranks"])
    ]
    deadline = time.monotonic() + timeout_s
    total = len(plan["ops"]) * len(plan["sizes"])
    done = 0
    assert procs[0].stdout is not None
    for line in procs[0].stdout:
        if '"done"' in line:
            done += 1
            ctx.emit.progress(5 + 85 * done / max(total, 1), line.strip()[:120])
        if time.monotonic() > deadline:
            break
    errors = []
    for rank, proc in enumerate(procs):
        try:
            _, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
            errors.append(f"rank {rank} timed out after {timeout_s:.0f} s")
            continue
        if proc.returncode != 0:
            errors.append(f"rank {rank} exited {proc.returncode}: {(err or '').strip()[-800:]}")
    if errors:
        raise RuntimeError("; ".join(errors))
    return json.loads(Path(plan["out"]).read_text())


def _topology(ctx: RunContext) -> dict[str, Any]:
    for tool, argv, parse in (
        ("nvidia-smi", ["nvidia-smi", "topo", "-m"], topology.parse_nvidia_topo),
        ("rocm-smi", ["rocm-smi", "--showtopo"], topology.parse_rocm_topo),
    ):
        if which(tool):
            try:
                out = run_tool(argv, timeout=60).stdout
            except Exception as exc:  # recorded, not fatal
                return {"tool": tool, "error": str(exc)[:300]}
            ctx.write_artifact(f"collective/{tool}-topo.txt", out, description=f"{' '.join(argv)}")
            return {"tool": tool, **parse(out)}
    return {"tool": None, "links": {}, "note": "no nvidia-smi or rocm-smi here"}


def _tool_runs(ctx: RunContext, params: dict[str, Any], ranks: int) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for op in params["collectives"]:
        binary = nccl_tests.find(op)
        if not binary:
            continue
        argv = nccl_tests.command(
            binary,
            min_bytes=params["min_bytes"],
            max_bytes=params["max_bytes"],
            factor=params["factor"],
            gpus=ranks,
            dtype=params["dtype"],
            iters=params["iters"],
            warmup=params["warmup"],
            check=True,
        )
        try:
            out = run_tool(argv, timeout=params["tool_timeout_s"]).stdout
        except Exception as exc:
            found[op] = {"argv": argv, "error": str(exc)[:500]}
            continue
        ctx.write_artifact(
            f"collective/{nccl_tests.BINARIES[op]}.txt", out, description=" ".join(argv)
        )
        found[op] = {"argv": argv, **nccl_tests.parse(out)}
    return found


def run(params: dict[str, Any], ctx: RunContext) -> RunResult:
    started = time.monotonic()
    try:
        platform = _platform(params)
        backend, ranks, why = _choose(params, platform)
    except (ValueError, RuntimeError, subprocess.TimeoutExpired) as exc:
        return RunResult(status=ERRORED, error=str(exc))
    ops = [op for op in OPS if op in params["collectives"]]
    if ranks < 2:
        ops = [op for op in ops if op != "send_recv"]  # a ring of one sends to itself
    sizes = sweep(
        params["min_bytes"], params["max_bytes"], params["factor"], ranks, params["dtype"]
    )
    plan = {
        "ranks": ranks,
        "backend": backend,
        "port": _free_port(),
        "ops": ops,
        "sizes": sizes,
        "dtype": params["dtype"],
        "iters": params["iters"],
        "warmup": params["warmup"],
        "repeats": params["repeats"],
        "timeout_s": params["rank_timeout_s"],
        "out": str(ctx.work / "collective-rows.json"),
    }
    ctx.emit.log(f"collective-bench: {why}; {len(ops)} collectives x {len(sizes)} sizes")
    try:
        data = _run_ranks(ctx, plan, params["rank_timeout_s"] * 2 + 60)
    except RuntimeError as exc:
        return RunResult(status=ERRORED, error=f"the ranks did not finish: {exc}")
    topo = _topology(ctx) if backend == "nccl" else {"tool": None, "links": {}}
    link = topology.peak_for(platform.get("name")) if backend == "nccl" and ranks > 1 else None
    measurements: list[Measurement] = []
    table: list[dict[str, Any]] = []
    wrong, unsupported = [], {}
    for row in data["rows"]:
        op, size = row["op"], row["size"]
        if "error" in row:
            unsupported.setdefault(op, row["error"])
            continue
        seconds = [s for s in row["seconds"] if s > 0]
        if not seconds:
            continue
        median = statistics.median(seconds)
        case = {
            "op": op,
            "bytes": size,
            "dtype": params["dtype"],
            "ranks": ranks,
            "backend": backend,
        }
        bus = [busbw_gbps(op, ranks, size, s) for s in seconds]
        if ranks < 2:
            # One rank moves nothing across a link: NCCL short-circuits or copies locally,
            # so a "bandwidth" would be a memory copy's (or infinite); only time is kept.
            measurements.append(
                Measurement(
                    BENCHMARK, "time", "us", median * 1e6, [s * 1e6 for s in seconds], case, "lower"
                )
            )
            table.append(
                {
                    "op": op,
                    "bytes": size,
                    "time_us": round(median * 1e6, 3),
                    "wrong": row["wrong"],
                    "samples": len(seconds),
                }
            )
            if row["wrong"]:
                wrong.append(f"{op} {size} B: {row['wrong']} wrong elements")
            continue
        measurements += [
            Measurement(
                BENCHMARK, "time", "us", median * 1e6, [s * 1e6 for s in seconds], case, "lower"
            ),
            Measurement(
                BENCHMARK,
                "algbw",
                "GB/s",
                algbw_gbps(size, median),
                [algbw_gbps(size, s) for s in seconds],
                case,
                "higher",
            ),
            Measurement(
                BENCHMARK, "busbw", "GB/s", busbw_gbps(op, ranks, size, median), bus, case, "higher"
            ),
        ]
        cv = (
            statistics.pstdev(seconds) / statistics.mean(seconds) * 100 if len(seconds) > 1 else 0.0
        )
        entry = {
            "op": op,
            "bytes": size,
            "time_us": round(median * 1e6, 3),
            "algbw_gbps": round(algbw_gbps(size, median), 3),
            "busbw_gbps": round(busbw_gbps(op, ranks, size, median), 3),
            "cv_pct": round(cv, 2),
            "wrong": row["wrong"],
            "samples": len(seconds),
        }
        if link:
            entry["pct_of_link_peak"] = round(entry["busbw_gbps"] / link[1]["gbps"] * 100, 2)
        table.append(entry)
        if row["wrong"]:
            wrong.append(f"{op} {size} B: {row['wrong']} wrong elements")
    tools = _tool_runs(ctx, params, ranks) if backend == "nccl" and params["tools"] else {}
    summary = {
        "note": (
            "one rank: no link is measured (collectives of one rank are local copies or "
            "no-ops); only times and correctness are kept"
            if ranks < 2
            else None
        ),
        "backend": backend,
        "ranks": ranks,
        "why": why,
        "dtype": params["dtype"],
        "torch": data.get("torch"),
        "gpu": platform.get("name"),
        "formulas": {
            op: f"busbw = algbw x {bus_factor(op, max(ranks, 2)):.3g} at {max(ranks, 2)} ranks"
            for op in ops
        },
        "table": table,
        "unsupported": unsupported,
        "wrong": wrong,
        "topology": topo,
        "link_peak": {"name": link[0], **{k: v for k, v in link[1].items() if k != "match"}}
        if link
        else None,
        "tools": tools,
        "seconds": round(time.monotonic() - started, 2),
    }
    artifacts = [
        ctx.write_artifact(
            "collective/table.json",
            json.dumps(summary, indent=1),
            "application/json",
            "every collective and size: time, algbw, busbw, CV, correctness",
        )
    ]
    if wrong:
        return RunResult(
            FAILED,
            None,
            measurements,
            summary,
            artifacts,
            error="wrong results: " + "; ".join(wrong[:5]),
        )
    if not measurements:
        return RunResult(
            ERRORED,
            None,
            measurements,
            summary,
            artifacts,
            error="nothing measured: " + "; ".join(f"{k}: {v}" for k, v in unsupported.items()),
        )
    return RunResult(SUCCEEDED, None, measurements, summary, artifacts)
