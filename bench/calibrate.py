"""Calibrate the regression verdicts on series built from real H200 samples.

What a user acts on after a scheduled run is the verdict of each case against its
baseline. This measures, for a stated level of run-to-run noise, how often the verdicts
the product writes (results.detect.judge, the service's own entry point) say
"regressed" when nothing changed, how often they catch a planted 5 % / 10 % slowdown,
and how often they call a real slowdown "unchanged".

A series is one simulated scope: a baseline run, ``--history`` earlier runs and the run
being judged, each run a job of ``--cases`` throughput cases. Each case's per-iteration
samples in a run are drawn (with replacement) from the samples of a real case of the
H200 blas-bench run (docs/results/blas-bench-h200.json: GEMMs of 7 precisions, FFTs,
solvers; within-run CVs from 0.03 % to 46 %), then scaled by a run-level factor: the
drift between runs that the samples of one run cannot show. Noise models of that factor
(log scale, its SD is ``--cv``):

  lognormal   log f ~ Normal(0, cv)
  heavy       log f ~ cv x Student-t(3) / sqrt(3): the same SD, heavy tails
  outliers    lognormal, and 10 % of runs slowed by a further 10-30 %

``--sharing independent``: each case of a run drifts on its own; ``shared``: one factor
per run moves every case (a throttled clock slows the whole job). A planted slowdown of s
divides every throughput sample of the judged run by 1 + s.

    .venv/bin/python bench/calibrate.py --series 100 \\
        --report docs/results/detector/calibration.json

Prints one table: per noise model, sharing and CV, the A/A verdicts that said regressed
(and improved), the 5 % and 10 % slowdowns caught, and the 10 % slowdowns called
"unchanged", each as a rate with its count and its 95 % Wilson interval; "decidable"
counts leave out the cases whose samples are too spread to conclude (verdict "noisy",
within-run CV past results.detect.MAX_CV), as users see them flagged.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

H200 = ROOT / "docs" / "results" / "blas-bench-h200.json"
MODELS = ("lognormal", "heavy", "outliers")
SLOWDOWNS = (0.05, 0.10)
MAX_SAMPLES = 120  # per case and run: the real counts (10-1,000) cost bootstrap time only


def real_cases(path: Path = H200) -> list[dict[str, Any]]:
    """The throughput cases of the real run that carry per-iteration samples."""
    document = json.loads(path.read_text())
    return [
        {"name": f"{m['benchmark']} {json.dumps(m['case'], sort_keys=True)}",
         "samples": np.asarray(m["samples"], dtype=float)}
        for m in document["measurements"]
        if m["metric"] == "throughput" and len(m.get("samples") or []) >= 2
    ]  # fmt: skip


def run_factors(
    rng: np.random.Generator, model: str, cv: float, runs: int, cases: int, shared: bool
) -> np.ndarray:
    """(runs, cases) multiplicative run-level factors of throughput."""
    shape = (runs, 1) if shared else (runs, cases)
    if model == "heavy":
        logs = cv * rng.standard_t(3, size=shape) / math.sqrt(3.0)
    else:
        logs = rng.normal(0.0, cv, size=shape)
    if model == "outliers":
        hit = rng.random(shape) < 0.10
        logs = logs - hit * np.log1p(rng.uniform(0.10, 0.30, size=shape))
    return np.broadcast_to(np.exp(logs), (runs, cases))


def one_series(
    rng: np.random.Generator,
    pool: list[dict[str, Any]],
    *,
    model: str,
    cv: float,
    shared: bool,
    history: int,
    cases: int,
    slowdown: float,
    seed: int,
) -> list[str]:
    """The verdicts of one judged run (one per case) in a fresh simulated scope."""
    from results.detect import CaseRuns, judge

    chosen = rng.choice(len(pool), size=cases, replace=False)
    runs = history + 2  # earlier runs, the baseline, the judged run
    factors = run_factors(rng, model, cv, runs, cases, shared)
    batch = {}
    for col, index in enumerate(chosen):
        real = pool[index]["samples"]
        n = min(len(real), MAX_SAMPLES)

        def draw(run: int, real: np.ndarray = real, n: int = n, col: int = col) -> np.ndarray:
            return rng.choice(real, size=n, replace=True) * factors[run, col]

        earlier = {run: float(np.median(draw(run))) for run in range(history)}
        baseline = draw(history)
        current = draw(history + 1) / (1.0 + slowdown)
        batch[col] = CaseRuns(list(baseline), list(current), earlier, higher_is_better=True)
    decisions = judge(batch, seed=seed)
    return [decisions[col].verdict for col in range(cases)]


def wilson(hits: int, n: int) -> tuple[float, float]:
    if n == 0:
        return (math.nan, math.nan)
    z = 1.959964
    centre = (hits + z * z / 2) / (n + z * z)
    half = z * math.sqrt(hits * (n - hits) / n + z * z / 4) / (n + z * z)
    return (max(0.0, centre - half), min(1.0, centre + half))


def rate(hits: int, n: int) -> dict[str, Any]:
    low, high = wilson(hits, n)
    return {"hits": hits, "n": n, "rate": hits / n if n else None, "low": low, "high": high}


def measure(args: argparse.Namespace) -> dict[str, Any]:
    pool = real_cases()
    rows = []
    combos = [
        (model, sharing, cv) for model in args.models for sharing in args.sharing for cv in args.cv
    ]
    for model, sharing, cv in combos:
        started = time.perf_counter()
        verdicts: dict[float, list[str]] = {}
        for slowdown in (0.0, *SLOWDOWNS):
            rng = np.random.default_rng([args.seed, MODELS.index(model), int(cv * 1e4),
                                         int(slowdown * 100), sharing == "shared"])  # fmt: skip
            out: list[str] = []
            for i in range(args.series):
                out += one_series(rng, pool, model=model, cv=cv, shared=sharing == "shared",
                                  history=args.history, cases=args.cases, slowdown=slowdown,
                                  seed=i)  # fmt: skip
            verdicts[slowdown] = out
        aa, s5, s10 = verdicts[0.0], verdicts[0.05], verdicts[0.10]

        def decided(v: list[str]) -> list[str]:
            return [x for x in v if x != "noisy"]

        row = {
            "model": model,
            "sharing": sharing,
            "cv": cv,
            "series": args.series,
            "verdicts_per_kind": len(aa),
            "aa_regressed": rate(aa.count("regressed"), len(aa)),
            "aa_improved": rate(aa.count("improved"), len(aa)),
            "aa_unchanged": rate(aa.count("unchanged"), len(aa)),
            "aa_noisy": rate(aa.count("noisy"), len(aa)),
            "caught_5": rate(s5.count("regressed"), len(s5)),
            "caught_10": rate(s10.count("regressed"), len(s10)),
            "caught_5_decidable": rate(s5.count("regressed"), len(decided(s5))),
            "caught_10_decidable": rate(s10.count("regressed"), len(decided(s10))),
            "aa_regressed_decidable": rate(aa.count("regressed"), len(decided(aa))),
            "unchanged_10": rate(s10.count("unchanged"), len(s10)),
            "unchanged_5": rate(s5.count("unchanged"), len(s5)),
            "inconclusive_10": rate(s10.count("inconclusive"), len(s10)),
            "seconds": round(time.perf_counter() - started, 1),
        }
        rows.append(row)
        print_row(row)
    return {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "host": platform.node(),
            "cpus": os.cpu_count(),
            "python": sys.version.split()[0],
        },
        "command": " ".join(sys.argv),
        "samples_from": str(H200.relative_to(ROOT)),
        "real_cases": len(pool),
        "history_runs": args.history,
        "cases_per_job": args.cases,
        "rows": rows,
    }


def pct(r: dict[str, Any]) -> str:
    if not r["n"]:
        return "-"
    low, high = 100 * r["low"], 100 * r["high"]
    return f"{100 * r['rate']:.1f} % ({r['hits']}/{r['n']}; {low:.1f}-{high:.1f})"


def print_row(row: dict[str, Any]) -> None:
    print(
        f"{row['model']:9} {row['sharing']:11} cv {100 * row['cv']:.1f} % | "
        f"A/A regressed {pct(row['aa_regressed'])}, improved {pct(row['aa_improved'])}, "
        f"unchanged {pct(row['aa_unchanged'])} | 5 % caught {pct(row['caught_5_decidable'])} | "
        f"10 % caught {pct(row['caught_10_decidable'])} (all {pct(row['caught_10'])}), "
        f"unchanged {pct(row['unchanged_10'])} | {row['seconds']} s",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--series", type=int, default=50, help="series per noise level and kind")
    parser.add_argument("--history", type=int, default=10, help="earlier runs before the baseline")
    parser.add_argument("--cases", type=int, default=16, help="throughput verdicts per job")
    parser.add_argument("--cv", type=lambda t: [float(x) for x in t.split(",")],
                        default=[0.005, 0.01, 0.015, 0.02, 0.03])  # fmt: skip
    parser.add_argument("--models", type=lambda t: t.split(","), default=list(MODELS))
    parser.add_argument("--sharing", type=lambda t: t.split(","),
                        default=["independent", "shared"])  # fmt: skip
    parser.add_argument("--seed", type=int, default=39)
    parser.add_argument("--report", type=Path)
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")
    result = measure(args)
    if args.report:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
