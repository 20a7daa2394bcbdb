"""Measure the regression detector on real A/A runs and planted slowdowns.

    # collect: run the real blas-bench runner (python -m stack run blas-bench) N times,
    # each run a fresh process as a job would be; needs only numpy (+ torch), no Django
    .venv/bin/python bench/detector.py collect --runs 60 --backends numpy,torch --device cpu \
        --sizes 512,1024 --precisions fp32 --out docs/results/detector/cpu-gemm.json
    # on a GPU machine (torch with CUDA), 30 runs a command, twice:
    python bench/detector.py collect --runs 30 --append --backends torch --device cuda \
        --sizes 4096,8192 --precisions fp32,bf16 --out docs/results/detector/h200-gemm.json

    # evaluate: false positives on the A/A series, detection of planted 5 % / 10 %
    # slowdowns, for our verdicts and change points, a Conbench-style z = 5 lookback and
    # a plain 5 % threshold, on the same data
    .venv/bin/python bench/detector.py evaluate docs/results/detector/cpu-gemm.json \
        --report docs/results/detector/cpu-gemm-evaluation.json

A series is one case + metric (the throughput, higher is better) across the runs; each
run keeps its median and its raw samples. A planted slowdown of s multiplies a run's
time samples by 1 + s (its throughput samples are divided by it): real noise, a known
change.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

RUNNER = [sys.executable, "-m", "stack", "run", "blas-bench"]
METRIC = "throughput"  # the figure a regression is about: higher is better
HISTORY_RUNS = 30  # as results.services.HISTORY_RUNS: the runs that tell run-to-run noise
VERDICT = "verdict (Mann-Whitney + effect + run-to-run noise)"
VERDICT_RAW = "verdict on raw samples alone (no history)"
CP_SERIES = "change points per series (A/A: any found; step: found within tolerance)"


# --------------------------------------------------------------------------
# collect
# --------------------------------------------------------------------------


def _csv(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def runner_params(args: argparse.Namespace) -> dict[str, Any]:
    """The blas-bench params of one A/A run: GEMM only, no check (it is not timed anyway)."""
    params: dict[str, Any] = {
        "families": ["gemm"],
        "backends": _csv(args.backends),
        "device": args.device,
        "precisions": _csv(args.precisions),
        "sizes": [int(s) for s in _csv(args.sizes)],
        "check": False,
        "telemetry": args.device != "cpu",
        "environment": False,
        "case_budget_s": args.case_budget_s,
        "min_sampling_s": args.min_sampling_s,
        # target_cv 0: every run samples for its whole budget, so runs have like sample
        # counts and the loop's stopping rule does not differ from run to run.
        "target_cv": 0.0,
    }
    if args.extra_params:
        params.update(json.loads(args.extra_params))
    return params


def run_once(params: dict[str, Any], env: dict[str, str]) -> list[dict[str, Any]]:
    """One fresh runner process; its throughput measurements (value, samples, case)."""
    with tempfile.TemporaryDirectory(prefix="detector-") as tmp:
        pfile = Path(tmp) / "params.json"
        pfile.write_text(json.dumps(params))
        out = Path(tmp) / "out"
        proc = subprocess.run(
            [*RUNNER, "--params", str(pfile), "--out", str(out)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
        result_file = out / "result.json"
        if not result_file.exists():
            raise RuntimeError(f"runner exited {proc.returncode}: {proc.stderr[-2000:]}")
        result = json.loads(result_file.read_text())
    return [m for m in result.get("measurements", []) if m["metric"] == METRIC]


def collect(args: argparse.Namespace) -> int:
    params = runner_params(args)
    env = dict(os.environ)
    if args.threads:
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env[var] = str(args.threads)
    series: dict[str, dict[str, Any]] = {}
    out = Path(args.out)
    first = 0
    earlier: dict[str, Any] = {}
    if args.append and out.exists():
        # Go on with a saved series (a device that limits each command's time).
        earlier = json.loads(out.read_text())
        if earlier["meta"]["params"] != params:
            raise SystemExit(f"{out} was collected with other params: {earlier['meta']['params']}")
        for s in earlier["series"]:
            series[json.dumps(s["case"], sort_keys=True)] = s
        first = 1 + max((r["run"] for s in earlier["series"] for r in s["runs"]), default=-1)
    started = time.time()
    for i in range(first, first + args.runs):
        t0 = time.time()
        for m in run_once(params, env):
            key = json.dumps(m["case"], sort_keys=True)
            s = series.setdefault(
                key,
                {"case": m["case"], "metric": m["metric"], "unit": m["unit"],
                 "better": m["better"], "runs": []},
            )  # fmt: skip
            s["runs"].append(
                {"run": i, "value": m["value"], "samples": m.get("samples") or [], "t": t0}
            )
        print(
            f"run {i + 1}/{first + args.runs}: {time.time() - t0:.1f} s",
            file=sys.stderr,
            flush=True,
        )
    data = {
        "meta": {
            "command": " ".join([Path(sys.executable).name, *sys.argv]),
            "runner": "python -m stack run blas-bench",
            "params": params,
            "threads": args.threads or None,
            "host": platform.node(),
            "machine": platform.platform(),
            "cpus": os.cpu_count(),
            "collected_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "wall_s": round(time.time() - started, 1),
            "appended_to": earlier.get("meta"),
        },
        "series": list(series.values()),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1))
    print(f"{len(series)} series x {first + args.runs} runs -> {out}", file=sys.stderr)
    return 0


# --------------------------------------------------------------------------
# evaluate
# --------------------------------------------------------------------------

Alarm = Callable[..., Any]


def slowed(samples: Sequence[float], s: float, higher_is_better: bool) -> list[float]:
    """Samples of a run s slower: time x (1 + s), so a rate / (1 + s)."""
    f = 1.0 / (1.0 + s) if higher_is_better else (1.0 + s)
    return [x * f for x in samples]


def evaluate(args: argparse.Namespace) -> int:
    import numpy as np

    from results.detect import change_points, compare_samples

    rng = np.random.default_rng(args.seed)
    report: dict[str, Any] = {"inputs": [], "config": vars(args).copy(), "series": []}
    report["config"].pop("func", None)
    totals: dict[str, dict[str, list[int]]] = {}

    def tally(method: str, scenario: str, alarms: int, trials: int) -> None:
        t = totals.setdefault(method, {}).setdefault(scenario, [0, 0])
        t[0] += alarms
        t[1] += trials

    for path in args.files:
        data = json.loads(Path(path).read_text())
        report["inputs"].append({"file": str(path), "meta": data.get("meta", {})})
        for s in data["series"]:
            runs = [r for r in s["runs"] if r["samples"]]
            if len(runs) < 12:
                continue
            if args.order == "shuffled":
                # Runs of an A/A series are exchangeable: a shuffle keeps their noise and
                # removes what the machine did over time (a neighbour's load arriving).
                runs = [runs[k] for k in rng.permutation(len(runs))]
            hib = s["better"] == "higher"
            values = np.array([r["value"] for r in runs])
            samples = [r["samples"] for r in runs]
            n = len(runs)
            row = {
                "case": s["case"],
                "runs": n,
                "median": float(np.median(values)),
                "run_to_run_cv": float(np.std(values, ddof=1) / np.mean(values)),
                "within_run_cv_median": float(
                    np.median([np.std(x, ddof=1) / np.mean(x) for x in samples])
                ),
            }
            # Pairs (baseline run i, current run j), i < j, j with min_history runs before
            # it: the baseline is an earlier job, as when one is pinned and later ones come.
            all_pairs = [(i, j) for j in range(args.min_history, n) for i in range(j)]
            take = rng.choice(len(all_pairs), size=min(args.pairs, len(all_pairs)), replace=False)
            pairs = [all_pairs[k] for k in sorted(take)]
            conbench = f"Conbench z > {args.z:g} (lookback {args.lookback})"
            plain_name = f"plain {int(args.threshold * 100)} % threshold"
            for scenario in ("aa", *(f"slow{int(p * 100)}" for p in args.slowdowns)):
                fraction = 0.0 if scenario == "aa" else int(scenario[4:]) / 100
                found = {VERDICT_RAW: 0, VERDICT: 0, plain_name: 0, conbench: 0}
                counts: dict[str, int] = {}
                for i, j in pairs:
                    cur = samples[j] if scenario == "aa" else slowed(samples[j], fraction, hib)
                    history = values[max(0, j - HISTORY_RUNS) : j]
                    raw = compare_samples(samples[i], cur, higher_is_better=hib, seed=i * n + j)
                    ours = compare_samples(
                        samples[i], cur, higher_is_better=hib, history=history, seed=i * n + j
                    )
                    counts[ours.verdict] = counts.get(ours.verdict, 0) + 1
                    # the plain threshold: this run's median against the baseline run's
                    v = float(np.median(cur))
                    change = v / values[i] - 1.0 if hib else values[i] / v - 1.0
                    # Conbench: this run's value against the mean and SD of the lookback
                    hist = values[max(0, j - args.lookback) : j]
                    sd = float(np.std(hist, ddof=1))
                    z = (v - float(np.mean(hist))) / sd if sd > 0 else 0.0
                    z = z if hib else -z
                    if scenario == "aa":
                        found[VERDICT_RAW] += raw.verdict in ("regressed", "improved")
                        found[VERDICT] += ours.verdict in ("regressed", "improved")
                        found[plain_name] += abs(change) > args.threshold
                        found[conbench] += abs(z) > args.z
                    else:
                        found[VERDICT_RAW] += raw.verdict == "regressed"
                        found[VERDICT] += ours.verdict == "regressed"
                        found[plain_name] += change < -args.threshold
                        found[conbench] += z < -args.z
                for method, alarms in found.items():
                    tally(method, scenario, alarms, len(pairs))
                row[f"verdicts_{scenario}"] = counts

            # --- change points over history -----------------------------------
            # A/A: the series in its real order, then shuffled orders (runs of an A/A
            # series are exchangeable; the real order keeps any drift the machine had).
            orders = [np.arange(n)] + [rng.permutation(n) for _ in range(args.shuffles)]
            false_series = false_points = positions = 0
            for order in orders:
                cps = change_points(values[order])
                false_series += bool(cps)
                false_points += len(cps)
                positions += n - 1
            row["change_points_as_ordered"] = change_points(values)
            tally(CP_SERIES, "aa", false_series, len(orders))
            tally("change points: false ones per run (A/A)", "aa", false_points, positions)
            for p in args.slowdowns:
                caught = extra = 0
                for order in orders:
                    step = int(rng.integers(n // 4, n - n // 4))
                    v = values[order].copy()
                    v[step:] = v[step:] / (1.0 + p) if hib else v[step:] * (1.0 + p)
                    cps = change_points(v)
                    hit = any(abs(c - step) <= args.tolerance for c in cps)
                    caught += hit
                    extra += len(cps) - hit
                tally(
                    CP_SERIES,
                    f"slow{int(p * 100)}",
                    caught,
                    len(orders),
                )
            report["series"].append(row)

    report["rates"] = {
        method: {sc: {"alarms": a, "trials": t, "rate": a / t if t else None}
                 for sc, (a, t) in scen.items()}
        for method, scen in totals.items()
    }  # fmt: skip
    print_table(report["rates"], args.slowdowns)
    if args.report:
        Path(args.report).parent.mkdir(parents=True, exist_ok=True)
        Path(args.report).write_text(json.dumps(report, indent=1, default=_plain))
    return 0


def _plain(o: Any) -> Any:
    """numpy scalars as Python numbers, for json."""
    return o.item() if hasattr(o, "item") else str(o)


def print_table(rates: dict[str, dict[str, dict[str, Any]]], slowdowns: Sequence[float]) -> None:
    cols = ["aa", *(f"slow{int(p * 100)}" for p in slowdowns)]
    head = ["method", "A/A false alarms", *(f"{c[4:]} % caught" for c in cols[1:])]
    print("| " + " | ".join(head) + " |")
    print("| --- |" + " ---: |" * (len(head) - 1))
    for method, scen in rates.items():
        cells = []
        for c in cols:
            r = scen.get(c)
            cells.append(f"{100 * r['rate']:.1f} % ({r['alarms']}/{r['trials']})" if r else "-")
        print(f"| {method} | " + " | ".join(cells) + " |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(required=True)
    c = sub.add_parser("collect", help="run the blas-bench runner N times (A/A series)")
    c.add_argument("--runs", type=int, default=60)
    c.add_argument("--backends", default="numpy,torch")
    c.add_argument("--device", default="cpu", help="cpu, cuda or auto (blas-bench's device)")
    c.add_argument("--sizes", default="512,1024")
    c.add_argument("--precisions", default="fp32")
    c.add_argument("--case-budget-s", type=float, default=1.0)
    c.add_argument("--min-sampling-s", type=float, default=0.5)
    c.add_argument("--threads", type=int, default=0, help="OMP/OpenBLAS/MKL threads (0: leave)")
    c.add_argument("--extra-params", default="", help="JSON merged into the runner's params")
    c.add_argument("--out", required=True)
    c.add_argument("--append", action="store_true", help="add runs to --out if it exists")
    c.set_defaults(func=collect)
    e = sub.add_parser("evaluate", help="false positives and detection on saved series")
    e.add_argument("files", nargs="+")
    e.add_argument("--slowdowns", type=lambda t: [float(x) for x in _csv(t)], default=[0.05, 0.10])
    e.add_argument("--pairs", type=int, default=300, help="baseline/current pairs per series")
    e.add_argument("--threshold", type=float, default=0.05, help="the plain threshold")
    e.add_argument("--z", type=float, default=5.0, help="Conbench's z threshold")
    e.add_argument("--lookback", type=int, default=100, help="Conbench's lookback (runs)")
    e.add_argument("--min-history", type=int, default=10)
    e.add_argument("--shuffles", type=int, default=40, help="shuffled A/A orders per series")
    e.add_argument("--tolerance", type=int, default=2, help="runs a change point may be off")
    e.add_argument("--seed", type=int, default=0)
    e.add_argument(
        "--order", choices=["real", "shuffled"], default="real",
        help="the runs as collected, or shuffled once per series (drift removed)",
    )  # fmt: skip
    e.add_argument("--report", default="")
    e.set_defaults(func=evaluate)
    args = ap.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
