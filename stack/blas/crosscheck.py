"""Validate the blas-bench runner against independent timers, interleaved.

    python -m stack.blas.crosscheck run --out DIR [--rounds 3] [--size 8192]
                                        [--bandwidth-mib 1024] [--device auto]
    python -m stack.blas.crosscheck reference --cases FILE --out FILE

``run`` alternates, round after round, the real job (``python -m stack run
blas-bench`` in its own process, exactly as a worker starts it) and a
reference process that times the same cases with timers rocpath did not
write: Triton's ``do_bench`` (CUDA events per call, median) when Triton is
installed, and ``torch.utils.benchmark.Timer.blocked_autorange`` (host
clock with device synchronisation, median of blocks). Each side runs alone
on the device; the order flips every round so that neither always gets the
cooler chip. The comparison (median over rounds of each side, gap in %)
goes to DIR/crosscheck.json and is printed as a table.

The reference builds its own inputs and calls torch directly; it shares no
timing code with stack.blas. Its windows match the job's (about 0.2 s of
warm-up, then 0.5 s of back-to-back timed calls; the job samples 0.5 to
1.5 s here) so that both see the chip in the same thermal and power state:
on a power-capped GPU a longer or gappier window changes the answer.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from stack.blas.precisions import PRECISION_NAMES as PRECISIONS

WARMUP_MS = 200
REP_MS = 500


def _cases(size: int, bandwidth_mib: float, precisions: list[str]) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = [
        {"family": "gemm", "precision": p, "m": size, "n": size, "k": size} for p in precisions
    ]
    cases += [
        {"family": "bandwidth", "op": op, "array_mib": float(bandwidth_mib)}
        for op in ("copy", "triad")
    ]
    return cases


def _key(case: dict[str, Any]) -> str:
    if case["family"] == "gemm":
        return f"gemm {case['precision']} {case['m']}x{case['n']}x{case['k']}"
    return f"bandwidth {case['op']} {float(case['array_mib']):g} MiB"


def _work(case: dict[str, Any]) -> tuple[float, str, float]:
    """(work per call, unit, scale) for a case."""
    if case["family"] == "gemm":
        unit = "TOPS" if case["precision"] == "int8" else "TFLOP/s"
        return 2.0 * case["m"] * case["n"] * case["k"], unit, 1e12
    n = int(float(case["array_mib"]) * 2**20) // 4
    arrays = 2 if case["op"] == "copy" else 3
    return float(arrays * n * 4), "GB/s", 1e9


# --------------------------------------------------------------------------
# The reference side (its own process)
# --------------------------------------------------------------------------


def _reference_fn(torch: Any, device: Any, case: dict[str, Any]) -> Any:
    gen = torch.Generator(device=device).manual_seed(1234)
    if case["family"] == "bandwidth":
        n = int(float(case["array_mib"]) * 2**20) // 4
        a = torch.randn(n, device=device, generator=gen)
        b = torch.randn(n, device=device, generator=gen)
        if case["op"] == "copy":
            return lambda: b.copy_(a)
        c = torch.randn(n, device=device, generator=gen)
        return lambda: torch.add(b, c, alpha=3.0, out=a)
    p, m, n, k = case["precision"], case["m"], case["n"], case["k"]
    torch.set_float32_matmul_precision("high" if p == "tf32" else "highest")
    if p == "int8":
        a = torch.randint(-128, 128, (m, k), device=device, dtype=torch.int8, generator=gen)
        b = torch.randint(-128, 128, (k, n), device=device, dtype=torch.int8, generator=gen)
        return lambda: torch._int_mm(a, b)
    if p == "fp8":
        hip = getattr(torch.version, "hip", None)
        arch = ""
        if hip and device.type == "cuda":
            arch = str(getattr(torch.cuda.get_device_properties(device), "gcnArchName", ""))
        dtype = torch.float8_e4m3fnuz if arch.startswith("gfx94") else torch.float8_e4m3fn
        a = torch.randn((m, k), device=device, generator=gen).to(dtype)
        b = torch.randn((n, k), device=device, generator=gen).to(dtype).t()
        one = torch.ones((), device=device)
        return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    dtype = {"fp64": torch.float64, "fp32": torch.float32, "tf32": torch.float32,
             "fp16": torch.float16, "bf16": torch.bfloat16}[p]  # fmt: skip
    # Full entropy: FP64 normals drawn as float64 (a float32 draw cast up leaves 29
    # mantissa bits zero and ran 12 % faster on an H200); narrower floats round a float32.
    draw = torch.float64 if dtype == torch.float64 else torch.float32
    a = torch.randn((m, k), device=device, generator=gen, dtype=draw).to(dtype)
    b = torch.randn((k, n), device=device, generator=gen, dtype=draw).to(dtype)
    return lambda: torch.matmul(a, b)


def reference(cases_file: Path, out_file: Path) -> int:
    """Time every case with do_bench (if Triton is there) and torch.utils.benchmark."""
    import torch
    import torch.utils.benchmark as tbench

    try:
        from triton.testing import do_bench
    except Exception:  # Triton is optional (CPU machines)
        do_bench = None
    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    cases = json.loads(cases_file.read_text())
    results = []
    for case in cases:
        entry: dict[str, Any] = {"key": _key(case)}
        try:
            fn = _reference_fn(torch, device, case)
            if do_bench is not None and device.type == "cuda":
                ms = do_bench(fn, warmup=WARMUP_MS, rep=REP_MS, return_mode="median")
                entry["do_bench_ms"] = float(ms)
            timer = tbench.Timer(
                stmt="fn()", globals={"fn": fn}, num_threads=torch.get_num_threads()
            )
            # Warm-up, then 5 blocks of about REP_MS / 5 each. (blocked_autorange
            # would pick blocks of up to 1000 calls, seconds each for a big GEMM:
            # a much longer window than the job's, so a different thermal state.)
            single = timer.timeit(1).median
            t_end = time.perf_counter() + WARMUP_MS / 1000
            while time.perf_counter() < t_end:
                fn()
            number = max(1, math.ceil(REP_MS / 1000 / 5 / max(single, 1e-7)))
            blocks = [timer.timeit(number).median for _ in range(5)]
            entry["torch_benchmark_ms"] = statistics.median(blocks) * 1e3
            entry["torch_benchmark_blocks"] = [number, len(blocks)]
        except Exception as exc:  # recorded, the others go on
            entry["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
        finally:
            torch.set_float32_matmul_precision("highest")
        results.append(entry)
        if device.type == "cuda":
            torch.cuda.empty_cache()
    out_file.write_text(json.dumps({"device": str(device), "results": results}, indent=2))
    return 0


# --------------------------------------------------------------------------
# The orchestrator
# --------------------------------------------------------------------------


def _runner_times(result_file: Path) -> dict[str, dict[str, Any]]:
    """Median time (ms) and telemetry per case key from a blas-bench result.json."""
    data = json.loads(result_file.read_text())
    found: dict[str, dict[str, Any]] = {}
    for m in data.get("measurements", []):
        if m["metric"] != "time":
            continue
        if m["benchmark"] not in ("gemm", "bandwidth"):
            continue
        key = _key({"family": m["benchmark"], **m["case"]})
        found.setdefault(key, {})["ms"] = m["value"]
        found[key]["samples"] = len(m["samples"])
    for family, rows in data.get("summary", {}).get("tables", {}).items():
        for row in rows:
            key = _key({"family": family, **row}) if family in ("gemm", "bandwidth") else None
            if key in found:
                found[key]["telemetry"] = row.get("telemetry")
                found[key]["cv_pct"] = row.get("cv_pct")
                found[key]["check_passed"] = (row.get("check") or {}).get("passed")
    found["_status"] = {"status": data.get("status"), "error": data.get("error")}
    return found


def _reference_times(path: Path) -> dict[str, Any]:
    """A reference round's entries by case key (none when the file is missing)."""
    data = json.loads(path.read_text()) if path.exists() else {}
    return {e["key"]: e for e in data.get("results", [])}


def _median(values: list[float | None]) -> float | None:
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return statistics.median(finite) if finite else None


def orchestrate(out: Path, rounds: int, size: int, bandwidth_mib: float, device: str) -> int:
    """Interleave runner and reference rounds, then compare."""
    out.mkdir(parents=True, exist_ok=True)
    cases = _cases(size, bandwidth_mib, list(PRECISIONS))
    (out / "cases.json").write_text(json.dumps(cases, indent=2))
    params = {
        "families": ["gemm", "bandwidth"],
        "backends": ["torch"],
        "device": device,
        "precisions": list(PRECISIONS),
        "sizes": [size],
        "bandwidth_mib": [bandwidth_mib],
        "environment": False,
        "case_budget_s": 1.5,
    }
    (out / "runner-params.json").write_text(json.dumps(params, indent=2))
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    runner_rounds: list[dict[str, dict[str, Any]]] = []
    reference_rounds: list[dict[str, Any]] = []
    order_log = []
    for r in range(rounds):
        steps = ["runner", "reference"] if r % 2 == 0 else ["reference", "runner"]
        for step in steps:
            started = time.time()
            if step == "runner":
                target = out / f"runner-{r}"
                params_file = str(out / "runner-params.json")
                argv = [sys.executable, "-m", "stack", "run", "blas-bench",
                        "--params", params_file, "--out", str(target)]  # fmt: skip
                proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
                (out / f"runner-{r}.log").write_text(proc.stderr[-200000:])
                result = target / "result.json"
                runner_rounds.append(_runner_times(result) if result.exists() else {})
            else:
                target_file = out / f"reference-{r}.json"
                argv = [sys.executable, "-m", "stack.blas.crosscheck", "reference",
                        "--cases", str(out / "cases.json"), "--out", str(target_file)]  # fmt: skip
                proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
                if proc.returncode != 0:
                    (out / f"reference-{r}.log").write_text(proc.stderr[-200000:])
                reference_rounds.append(_reference_times(target_file))
            order_log.append({"round": r, "step": step, "seconds": round(time.time() - started, 1)})
            print(f"round {r}: {step} done in {time.time() - started:.1f} s", flush=True)

    report = compare(out, cases, runner_rounds, reference_rounds)
    report["order"] = order_log
    (out / "crosscheck.json").write_text(json.dumps(report, indent=2))
    print_table(report)
    return 0


def load_rounds(out: Path) -> tuple[list[dict[str, dict[str, Any]]], list[dict[str, Any]]]:
    """Runner and reference rounds found in a cross-check folder (complete or not)."""
    runner_rounds = []
    reference_rounds = []
    r = 0
    while (out / f"runner-{r}").exists() or (out / f"reference-{r}.json").exists():
        result = out / f"runner-{r}" / "result.json"
        if result.exists():
            runner_rounds.append(_runner_times(result))
        ref = out / f"reference-{r}.json"
        if ref.exists():
            reference_rounds.append(_reference_times(ref))
        r += 1
    return runner_rounds, reference_rounds


def compare(
    out: Path,
    cases: list[dict[str, Any]],
    runner_rounds: list[dict[str, dict[str, Any]]],
    reference_rounds: list[dict[str, Any]],
) -> dict[str, Any]:
    """Medians over rounds of each side, and the gaps, per case."""
    rows = []
    for case in cases:
        key = _key(case)
        work, unit, scale = _work(case)
        runner_ms = [rr.get(key, {}).get("ms") for rr in runner_rounds]
        do_bench_ms = [rf.get(key, {}).get("do_bench_ms") for rf in reference_rounds]
        torch_ms = [rf.get(key, {}).get("torch_benchmark_ms") for rf in reference_rounds]
        row: dict[str, Any] = {"case": key, "unit": unit, "work_per_call": work}
        for name, series in (
            ("runner", runner_ms),
            ("do_bench", do_bench_ms),
            ("torch_benchmark", torch_ms),
        ):
            med = _median(series)
            row[name] = {
                "per_round_ms": series,
                "median_ms": med,
                "rate": None if not med else work / (med / 1e3) / scale,
            }
        base = row["runner"]["median_ms"]
        for name in ("do_bench", "torch_benchmark"):
            ref = row[name]["median_ms"]
            row[f"gap_pct_vs_{name}"] = (
                None if not (base and ref) else round((ref / base - 1) * 100, 2)
            )
        gaps = [
            abs(g)
            for g in (row["gap_pct_vs_do_bench"], row["gap_pct_vs_torch_benchmark"])
            if g is not None
        ]
        row["within_3pct"] = bool(gaps) and max(gaps) <= 3.0
        row["runner_telemetry"] = [rr.get(key, {}).get("telemetry") for rr in runner_rounds]
        row["runner_cv_pct"] = [rr.get(key, {}).get("cv_pct") for rr in runner_rounds]
        row["runner_samples"] = [rr.get(key, {}).get("samples") for rr in runner_rounds]
        row["runner_check_passed"] = [rr.get(key, {}).get("check_passed") for rr in runner_rounds]
        rows.append(row)
    return {
        "what": "blas-bench runner vs independent timers, interleaved (stack/blas/crosscheck.py)",
        "folder": str(out),
        "runner_rounds": len(runner_rounds),
        "reference_rounds": len(reference_rounds),
        "reference_windows_ms": {"warmup": WARMUP_MS, "rep": REP_MS},
        "runner_status": [rr.get("_status") for rr in runner_rounds],
        "gap_definition": "(runner rate / reference rate - 1) * 100, from the medians over rounds",
        "cases": rows,
    }


def print_table(report: dict[str, Any]) -> None:
    """The comparison as a fixed-width table."""

    def fmt(x: Any) -> str:
        return "         -" if x is None else f"{x:10.1f}"

    def fmt_gap(x: Any) -> str:
        return "       -" if x is None else f"{x:8.2f}"

    print(
        f"{'case':36} {'unit':8} {'runner':>10} {'do_bench':>10} {'torch.bm':>10} "
        f"{'gap_db%':>8} {'gap_tb%':>8}"
    )
    for row in report["cases"]:
        print(
            f"{row['case']:36} {row['unit']:8} {fmt(row['runner']['rate'])} "
            f"{fmt(row['do_bench']['rate'])} {fmt(row['torch_benchmark']['rate'])} "
            f"{fmt_gap(row['gap_pct_vs_do_bench'])} {fmt_gap(row['gap_pct_vs_torch_benchmark'])}"
        )


def main(argv: list[str] | None = None) -> int:
    """Command line (argparse is fine here: this is a developer tool, not the job path)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m stack.blas.crosscheck")
    sub = parser.add_subparsers(dest="command", required=True)
    run_p = sub.add_parser("run")
    run_p.add_argument("--out", required=True, type=Path)
    run_p.add_argument("--rounds", type=int, default=3)
    run_p.add_argument("--size", type=int, default=8192)
    run_p.add_argument("--bandwidth-mib", type=float, default=1024)
    run_p.add_argument("--device", default="auto")
    cmp_p = sub.add_parser("compare")
    cmp_p.add_argument("--out", required=True, type=Path)
    ref_p = sub.add_parser("reference")
    ref_p.add_argument("--cases", required=True, type=Path)
    ref_p.add_argument("--out", required=True, type=Path)
    args = parser.parse_args(argv)
    if args.command == "reference":
        return reference(args.cases, args.out)
    if args.command == "compare":
        cases = json.loads((args.out / "cases.json").read_text())
        runner_rounds, reference_rounds = load_rounds(args.out)
        report = compare(args.out, cases, runner_rounds, reference_rounds)
        (args.out / "crosscheck.json").write_text(json.dumps(report, indent=2))
        print_table(report)
        return 0
    return orchestrate(args.out, args.rounds, args.size, args.bandwidth_mib, args.device)


if __name__ == "__main__":
    sys.exit(main())
