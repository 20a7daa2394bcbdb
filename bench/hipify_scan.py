"""HIPIFY scan speed: rocpath's fast engine against hipify-perl's own passes, in one run.

A CUDA corpus is generated from a seed (stack.hipify.corpus: the installed
hipify-perl's tables in realistic code shapes; written under var/, never
committed), then:

1. warning pass: rocpath's cold scan (fresh process state, no cache, all CPUs)
   vs ``hipify-perl -examine`` with warnings (batched, sharded over all CPUs,
   which is the fastest way to run the tool). The tool costs about 20 ms per
   line with warnings on, so by default it runs on a seeded sample of files
   (``--reference-lines``) and its time is scaled by lines to the full corpus;
   rocpath is also timed on that same sample, so the sample ratio is measured,
   not scaled. ``--full`` runs the tool over everything. The sample's findings
   are compared file by file (they must be identical).
2. conversion-only pass: rocpath with warnings off vs ONE
   ``hipify-perl -examine -quiet-warnings`` process over the whole corpus.
3. re-scan: a hipify-scan job (the kind's run, in this process, started as a
   fresh runner would be: no tables or index in memory) filling a findings
   cache, 1 % of the files changed, the same job again with the cache. Both
   include what a job does besides scanning: findings.json and the report.
   ``--repeat`` of each (a new 1 % each re-scan); the medians are compared.

    .venv/bin/python bench/hipify_scan.py [--files 320 --lines 110000 --seed 4]

Goals (issue 4): 1. >= 50x, 2. <= 0.6x, 3. <= 0.05x. Prints a JSON report and
writes it to var/bench/hipify_scan.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from stack.hipify import fast, tables  # noqa: E402
from stack.hipify.corpus import generate_corpus  # noqa: E402
from stack.hipify.examine import (  # noqa: E402
    examined_view,
    run_examine,
    tool_view,
    usable_cpus,
)
from stack.hipify.scan import scan_tree  # noqa: E402


def fresh_process_state() -> None:
    """Forget what an earlier scan in this process built, as a new job would not have it."""
    tables._MEMO.clear()
    fast._INDEXES.clear()


def timed_scan(root: Path, **kwargs: object) -> tuple[float, float, object]:
    """(wall s, CPU s of this process and its children, ScanResult)."""
    fresh_process_state()
    before = os.times()
    started = time.monotonic()
    result = scan_tree(root, **kwargs)  # type: ignore[arg-type]
    wall = time.monotonic() - started
    after = os.times()
    cpu = sum(after[:4]) - sum(before[:4])
    return wall, cpu, result


def timed_job(work: Path, cache: Path, out: Path) -> tuple[float, float, dict]:
    """(wall s, CPU s, summary) of a hipify-scan job over WORK/src, run in this process."""
    from stack.events import Emitter
    from stack.kinds import validate_params
    from stack.kinds.hipify_scan import run
    from stack.runtime import RunContext

    # The project's cache comes with the run context (the kind takes no cache_dir param).
    params = validate_params("hipify-scan", {})
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    with open(os.devnull, "w") as sink:
        ctx = RunContext(out=out, emit=Emitter(sink), work=work, cache_dir=cache)
        fresh_process_state()
        before = os.times()
        started = time.monotonic()
        result = run(params, ctx)
        wall = time.monotonic() - started
        after = os.times()
    if result.status != "succeeded":
        raise SystemExit(f"the scan job ended {result.status}: {result.error}")
    return wall, sum(after[:4]) - sum(before[:4]), result.summary


def line_count(path: Path) -> int:
    return path.read_bytes().count(b"\n")


def sample_files(lines: dict[str, int], budget: int, seed: int) -> list[str]:
    """A seeded random sample of files (``lines``: lines per path) of about ``budget`` lines."""
    order = list(lines)
    random.Random(seed).shuffle(order)
    chosen, total = [], 0
    for rel in order:
        if total >= budget:
            break
        chosen.append(rel)
        total += lines[rel]
    return sorted(chosen)


def compare(root: Path, files: list[str], run: object, t: tables.Tables) -> list[str]:
    """Files whose fast findings differ from what hipify-perl printed."""
    bad = []
    for rel in files:
        mine = tool_view(fast.examine((root / rel).read_bytes(), t))
        theirs = examined_view(run.output.files[rel])  # type: ignore[attr-defined]
        if mine != theirs:
            bad.append(rel)
    return bad


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=320)
    parser.add_argument("--lines", type=int, default=110_000)
    parser.add_argument("--seed", type=int, default=4)
    parser.add_argument("--reference-lines", type=int, default=12_000)
    parser.add_argument(
        "--full", action="store_true", help="run hipify-perl's warning pass on all files"
    )
    parser.add_argument("--workdir", default=str(REPO / "var/bench/hipify"))
    parser.add_argument("--jobs", type=int, default=0, help="CPUs to use (0: all usable)")
    parser.add_argument(
        "--repeat", type=int, default=5, help="cold and re-scan jobs to run (medians compared)"
    )
    args = parser.parse_args()
    jobs = args.jobs or usable_cpus()

    work = Path(args.workdir)
    shutil.rmtree(work, ignore_errors=True)
    corpus = work / "src"  # a job's source tree: WORK/src
    t = tables.load_tables()
    started = time.monotonic()
    files = generate_corpus(corpus, t, files=args.files, lines=args.lines, seed=args.seed)
    lines = {f: line_count(corpus / f) for f in files}
    total_lines = sum(lines.values())
    report: dict[str, object] = {
        "machine": {"cpus_usable": jobs, "python": sys.version.split()[0]},
        "hipify_perl": t.describe(),
        "corpus": {
            "files": len(files),
            "lines": total_lines,
            "bytes": sum((corpus / f).stat().st_size for f in files),
            "seed": args.seed,
            "generated_s": round(time.monotonic() - started, 3),
        },
    }

    # 1. warning pass
    wall, cpu, full = timed_scan(corpus, jobs=jobs)
    totals = full.summary["totals"]  # type: ignore[attr-defined]
    report["corpus"]["warnings"] = totals["warnings"]  # type: ignore[index]
    report["corpus"]["converted_refs"] = totals["converted_refs"]  # type: ignore[index]
    sample = files if args.full else sample_files(lines, args.reference_lines, args.seed)
    sample_lines = sum(lines[f] for f in sample)
    s_wall, _, _ = timed_scan(corpus, jobs=jobs, files=sample)
    before = os.times()
    started = time.monotonic()
    run = run_examine(sample, str(corpus), jobs=jobs)
    ref_wall = time.monotonic() - started
    ref_cpu = sum(os.times()[2:4]) - sum(before[2:4])
    mismatches = compare(corpus, sample, run, t)
    scale = total_lines / sample_lines
    report["warning_pass"] = {
        "rocpath_full": {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3)},
        "sample": {
            "files": len(sample),
            "lines": sample_lines,
            "rocpath_wall_s": round(s_wall, 3),
            "hipify_perl_wall_s": round(ref_wall, 3),
            "hipify_perl_cpu_s": round(ref_cpu, 3),
            "hipify_perl_calls": run.calls,
            "ratio": round(ref_wall / s_wall, 1),
            "files_with_different_findings": len(mismatches),
        },
        "hipify_perl_full_wall_s": round(ref_wall * scale, 1)
        if not args.full
        else round(ref_wall, 3),
        "hipify_perl_full_is": "measured"
        if args.full
        else f"scaled from the sample by lines (x{scale:.2f})",
        "ratio": round(ref_wall * scale / wall, 1),
        "goal": ">= 50",
    }

    # 2. conversion only: ONE hipify-perl -examine -quiet-warnings process
    q_wall, q_cpu, _ = timed_scan(corpus, jobs=jobs, warnings=False)
    before = os.times()
    started = time.monotonic()
    quiet = run_examine(files, str(corpus), jobs=1, quiet_warnings=True, max_files=len(files) + 1)
    one_wall = time.monotonic() - started
    one_cpu = sum(os.times()[2:4]) - sum(before[2:4])
    report["conversion_pass"] = {
        "rocpath_wall_s": round(q_wall, 3),
        "rocpath_cpu_s": round(q_cpu, 3),
        "hipify_perl_one_process_wall_s": round(one_wall, 3),
        "hipify_perl_cpu_s": round(one_cpu, 3),
        "hipify_perl_calls": quiet.calls,
        "ratio": round(q_wall / one_wall, 3),
        "goal": "<= 0.6",
    }

    # 3. re-scan with 1 % of the files changed, as jobs; medians of --repeat runs each
    colds = []
    for _ in range(args.repeat):
        cache = work / "cache"  # each cold job fills a new cache; the last one is kept
        shutil.rmtree(cache, ignore_errors=True)
        colds.append(timed_job(work, cache, work / "out-cold"))
    rescans, changed_counts = [], []
    rng = random.Random(args.seed + 1)
    for _ in range(args.repeat):
        changed = sorted(rng.sample(files, max(1, len(files) // 100)))
        for rel in changed:
            with open(corpus / rel, "ab") as f:
                f.write(b"cudaDeviceSynchronize(); // changed for the re-scan\n")
        changed_counts.append(len(changed))
        rescans.append(timed_job(work, cache, work / "out-rescan"))
    c_wall = statistics.median(wall for wall, _, _ in colds)
    r_wall = statistics.median(wall for wall, _, _ in rescans)
    cold, rescan = colds[-1][2], rescans[-1][2]
    report["rescan"] = {
        "cold_job_with_cache_fill": {
            "wall_s": [round(wall, 3) for wall, _, _ in colds],
            "cpu_s": [round(cpu, 3) for _, cpu, _ in colds],
            "last_timings_s": cold["timings_s"],
        },
        "files_changed_per_rescan": changed_counts,
        "rescan_job": {
            "wall_s": [round(wall, 3) for wall, _, _ in rescans],
            "cpu_s": [round(cpu, 3) for _, cpu, _ in rescans],
            "last_timings_s": rescan["timings_s"],
            "last_incremental": rescan["incremental"],
        },
        "ratio_of_medians": round(r_wall / c_wall, 3),
        "ratio_range": [
            round(min(w for w, _, _ in rescans) / max(w for w, _, _ in colds), 3),
            round(max(w for w, _, _ in rescans) / min(w for w, _, _ in colds), 3),
        ],
        "goal": "<= 0.05",
    }
    report["command"] = " ".join(["python", "bench/hipify_scan.py", *sys.argv[1:]])
    out = REPO / "var/bench/hipify_scan.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(report, indent=2)
    out.write_text(text + "\n")
    print(text)
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
