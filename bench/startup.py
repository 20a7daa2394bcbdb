"""Start-up cost: what ``django.setup()`` takes in a fresh interpreter, side by side.

Every rocpath process pays it: the web server, each worker, the control worker, beat,
every ``manage.py`` call and every test subprocess. Three programs run interleaved
(A B C A B C …) so that the machine's drift hits each alike:

- anchor: ``import django`` alone (the interpreter and Django, nothing of ours);
- this tree: ``django.setup()``;
- before (``--before REF``): the same in a copy of the tree at a git ref
  (``git archive``, under var/bench/, removed at the end).

Each child reports the seconds its setup took (perf_counter around the call) and the
parent the whole process's wall time. Prints a JSON report and writes it to
var/bench/startup.json.

    .venv/bin/python bench/startup.py --runs 20 --before HEAD~1
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "var" / "bench"

# The child times its own set-up, then says which heavy libraries it had loaded by then.
CHILD = """
import json, sys, time
t = time.perf_counter()
import django
{body}
elapsed = time.perf_counter() - t
print(json.dumps([elapsed, [m for m in {heavy} if m in sys.modules]]))
"""
SETUP = "django.setup()"
HEAVY = ("numpy", "scipy", "ruptures", "pygal", "torch")


def tree_at(ref: str) -> Path:
    """The repository's files at ``ref``, extracted from ``git archive`` (no worktree)."""
    dest = OUT / f"startup-{ref.replace('/', '_').replace('~', '-')}"
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "archive", "--format=tar", ref], cwd=ROOT, capture_output=True, check=True
    ).stdout
    tar = dest.with_suffix(".tar")
    tar.write_bytes(archive)
    with tarfile.open(tar) as handle:
        handle.extractall(dest, filter="data")
    tar.unlink()
    return dest


def once(tree: Path, body: str, settings: str) -> tuple[float, float, list[str]]:
    env = dict(os.environ, DJANGO_SETTINGS_MODULE=settings, PYTHONDONTWRITEBYTECODE="")
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", CHILD.format(body=body, heavy=HEAVY)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{tree}: {proc.stderr[-2000:]}")
    elapsed, heavy = json.loads(proc.stdout.strip().splitlines()[-1])
    return float(elapsed), wall, heavy


def summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "median_s": round(statistics.median(ordered), 3),
        "p90_s": round(ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))], 3),
        "min_s": round(ordered[0], 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--before", help="a git ref to compare against (e.g. HEAD~1)")
    parser.add_argument("--settings", default="config.settings.test")
    args = parser.parse_args()

    programs: dict[str, tuple[Path, str]] = {
        "anchor: import django": (ROOT, "pass"),
        "this tree: django.setup()": (ROOT, SETUP),
    }
    before = None
    if args.before:
        before = tree_at(args.before)
        programs[f"{args.before}: django.setup()"] = (before, SETUP)
    for tree, body in programs.values():  # warm the byte-code caches, untimed
        once(tree, body, args.settings)

    inner: dict[str, list[float]] = {name: [] for name in programs}
    walls: dict[str, list[float]] = {name: [] for name in programs}
    heavy: dict[str, list[str]] = {}
    for _ in range(args.runs):
        for name, (tree, body) in programs.items():
            setup_s, wall_s, heavy[name] = once(tree, body, args.settings)
            inner[name].append(setup_s)
            walls[name].append(wall_s)
    report = {
        "runs": args.runs,
        "settings": args.settings,
        "load_average_at_end": os.getloadavg(),
        "in_process": {name: summary(v) for name, v in inner.items()},
        "process_wall": {name: summary(v) for name, v in walls.items()},
        "heavy_modules_after_setup": heavy,
    }
    this = statistics.median(inner["this tree: django.setup()"])
    anchor = statistics.median(inner["anchor: import django"])
    report["ratio_setup_to_anchor"] = round(this / anchor, 2)
    if before is not None:
        old = statistics.median(inner[f"{args.before}: django.setup()"])
        report["ratio_this_to_before"] = round(this / old, 3)
        shutil.rmtree(before, ignore_errors=True)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "startup.json").write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
