"""The blas-bench job page with 5,000 measurements: time and bytes per request.

    .venv/bin/python bench/job_page.py --measurements 5000 --requests 30
    .venv/bin/python bench/job_page.py --tree /tmp/before --tree . --rounds 3

Seeds one succeeded blas-bench job in a throw-away PostgreSQL database: cases of
every family (GEMM in 7 precisions, 4 layouts and 14 sizes on torch, 2 on numpy;
bandwidth, FFT, solvers) made into Measurements, summary rows, flags and the claims
check by the same code the job runs (stack/blas/records.py, claims.py), cut to the
asked number of measurements. Each ``--tree`` (a checkout of rocpath, e.g. the
commit before a change extracted with ``git archive``) is then measured in a child
process of its own, against the same database, the trees interleaved round by round
so that the machine's drift falls on both: N GETs of the job page by a signed-in
member through Django's test client (the whole middleware stack, templates and
queries, no network), each after emptying the cache (a first view), then N more as
they come (later views), reporting median and p95 times, bytes, SVG bytes and queries.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PG = "postgres://postgres@127.0.0.1:5432"


def _env(dbname: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings.test",
            "DATABASE_URL": f"{PG}/{dbname}",
            "ALLOWED_HOSTS": "testserver",
            "LOG_LEVEL": "WARNING",
        }
    )
    return env


# --------------------------------------------------------------------------- seeding


def _timing(rng: random.Random, seconds: float, noisy: bool) -> Any:
    from stack.blas.stats import Timing

    spread = 0.08 if noisy else 0.005
    samples = [seconds * (1 + abs(rng.gauss(0, spread))) for _ in range(rng.randint(20, 40))]
    return Timing(samples, 4, 10, "cv" if not noisy else "budget", 0.0, 1.0)


def _telemetry(rng: random.Random) -> dict[str, Any]:
    def window(centre: float) -> tuple[list[float], dict[str, float]]:
        values = [centre * (1 + rng.gauss(0, 0.01)) for _ in range(20)]
        return values, {"median": statistics.median(values), "min": min(values)}

    clocks, clock_stats = window(1980.0)
    power, power_stats = window(620.0)
    temps, temp_stats = window(61.0)
    return {
        "samples": 20,
        "sm_clock_samples": clocks,
        "sm_clock_mhz": clock_stats,
        "mem_clock_mhz": {"median": 2619.0},
        "power_samples": power,
        "power_w": power_stats,
        "temperature_samples": temps,
        "temperature_c": temp_stats,
        "throttled": False,
        "throttle_reasons": [],
        "clock_spread": 0.01,
        "clock_unstable": False,
    }


def synthetic_results(seed: int = 7) -> list[Any]:
    """CaseResults of a full sweep on an H200-like device and a CPU, with made-up timings.

    The numbers are invented (this measures the page, not a GPU); their shapes are
    what the runner makes: one CaseResult per case, telemetry on the GPU backend.
    """
    from stack.blas.gemm import FAMILY as GEMM
    from stack.blas.precisions import gemm_flops
    from stack.blas.results import CaseResult, CheckResult

    rng = random.Random(seed)
    peaks = {"fp64": 67.0, "fp32": 67.0, "tf32": 494.7, "bf16": 989.4, "fp16": 989.4}
    peaks |= {"fp8": 1978.9, "int8": 1978.9}
    sizes = [256, 384, 512, 768, 1024, 1536, 2048, 2560, 3072, 4096, 5120, 6144, 7168, 8192]
    out = []
    for backend, precisions in (("torch", list(peaks)), ("numpy", ["fp32", "fp64"])):
        gpu = backend == "torch"
        for precision in precisions:
            for size in sizes:
                for layout in ("NN", "NT", "TN", "TT"):
                    flops = gemm_flops(size, size, size)
                    rate = (peaks[precision] * 0.7 if gpu else 1.5) * min(1.0, size / 4096)
                    result = CaseResult(
                        family=GEMM,
                        backend=backend,
                        case={
                            "backend": backend,
                            "device": "cuda:0" if gpu else "cpu",
                            "precision": precision,
                            "m": size,
                            "n": size,
                            "k": size,
                            "batch": 1,
                            "transa": layout[0],
                            "transb": layout[1],
                        },
                        timing=_timing(rng, flops / (rate * 1e12), noisy=size < 1024),
                        work=float(flops),
                        rate_unit="TOPS" if precision == "int8" else "TFLOP/s",
                        peak=peaks[precision] if gpu else None,
                        peak_label=f"H200 {precision.upper()} dense" if gpu else None,
                        check=CheckResult(True, 1e-4, 1e-2, "full"),
                        footprint_bytes=12 * size * size,
                        peak_memory_bytes=13 * size * size if gpu else None,
                        telemetry=_telemetry(rng) if gpu else None,
                    )
                    out.append(result)
        for op in ("copy", "triad"):
            for mib in (64, 128, 256, 512, 1024, 2048, 4096, 8192):
                moved = (2 if op == "copy" else 3) * mib * 2**20
                out.append(
                    CaseResult(
                        family="bandwidth",
                        backend=backend,
                        case={"backend": backend, "op": op, "precision": "fp32", "array_mib": mib},
                        timing=_timing(rng, moved / ((4000 if gpu else 40) * 1e9), noisy=False),
                        work=float(moved),
                        rate_unit="GB/s",
                        rate_scale=1e9,
                        peak=4800.0 if gpu else None,
                        telemetry=_telemetry(rng) if gpu else None,
                    )
                )
        for precision in ("fp32", "fp64"):
            for shape in ("4096", "65536", "1048576", "256x256", "1024x1024", "64x64x64"):
                points = 1
                for dim in shape.split("x"):
                    points *= int(dim)
                work = 5.0 * points * max(points.bit_length() - 1, 1) * 16
                result = CaseResult(
                    family="fft",
                    backend=backend,
                    case={
                        "backend": backend,
                        "precision": precision,
                        "shape": shape,
                        "dims": shape.count("x") + 1,
                        "batch": 16,
                    },
                    timing=_timing(rng, work / ((20 if gpu else 0.05) * 1e12), noisy=False),
                    work=work,
                    footprint_bytes=2 * points * 16 * 8,
                    telemetry=_telemetry(rng) if gpu else None,
                )
                result.extra["bytes_per_call"] = 2 * points * 16 * 8
                out.append(result)
        for op in ("lu", "cholesky", "qr"):
            for precision in ("fp32", "fp64"):
                for n in (512, 1024, 2048, 4096, 8192, 16384):
                    work = {"lu": 2 / 3, "cholesky": 1 / 3, "qr": 4 / 3}[op] * n**3
                    out.append(
                        CaseResult(
                            family="solver",
                            backend=backend,
                            case={"backend": backend, "op": op, "precision": precision, "n": n},
                            timing=_timing(rng, work / ((30 if gpu else 0.5) * 1e12), False),
                            work=work,
                            check=CheckResult(True, 1e-6, 1e-3, "reconstruction"),
                            footprint_bytes=2 * n * n * 8,
                            telemetry=_telemetry(rng) if gpu else None,
                        )
                    )
    return out


def seed(measurements: int) -> int:
    """One succeeded blas-bench job with ``measurements`` measurements; returns its id."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from jobs.choices import JobStatus
    from jobs.models import Job, Measurement
    from stack.blas import claims
    from stack.blas.records import describe_case, flags_for, measurements_for, summary_row
    from stack.kinds.blas_bench import KIND
    from teams.models import Membership, Team

    results = synthetic_results()
    rows = [m for r in results for m in measurements_for(r)]
    if len(rows) < measurements:
        raise SystemExit(f"the synthetic sweep makes {len(rows)} measurements, not {measurements}")
    rows = rows[:measurements]
    kept = {(m.benchmark, json.dumps(m.case, sort_keys=True)) for m in rows}
    results = [r for r in results if (r.family, json.dumps(r.case, sort_keys=True)) in kept]
    tables: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        tables.setdefault(r.family, []).append(summary_row(r, 0.02))
    h200 = {"fp32": 67.0, "bf16": 989.4, "fp8": 1978.9, "int8": 1978.9}
    summary = {
        "families": sorted(tables),
        "cases": {"planned": len(results), "measured": len(results)},
        "tables": tables,
        # as the runner stores them: judged for noise
        "claims": claims.judge_noise(claims.claims_check(results, {"torch": h200}), tables["gemm"]),
        "flags": flags_for(results, 0.02),
        "unsupported": [],
        "skipped": [],
        "labels": [describe_case(r) for r in results[:5]],
    }
    user = get_user_model().objects.create_user("bench")
    team = Team.objects.create(name="bench", slug="bench")
    Membership.objects.create(team=team, user=user, role="member")
    now = timezone.now()
    job = Job.objects.create(
        team=team,
        kind=KIND.name,
        status=JobStatus.SUCCEEDED,
        params={"families": sorted(tables)},
        summary=summary,
        timeout_s=3600,
        created_by=user,
        queued_at=now,
        started_at=now,
        finished_at=now,
    )
    Measurement.objects.bulk_create(
        (
            Measurement(
                job=job,
                benchmark=m.benchmark,
                case=m.case,
                metric=m.metric,
                unit=m.unit,
                value=m.value,
                samples=m.samples,
                better=m.better,
            )
            for m in rows
        ),
        batch_size=1000,
    )
    return job.pk


# --------------------------------------------------------------------------- measuring

_SVG = re.compile(rb"<svg\b.*?</svg>", re.S)


def _stats(times: list[float]) -> dict[str, float]:
    times = sorted(times)
    return {
        "median_ms": round(statistics.median(times) * 1e3, 1),
        "p95_ms": round(times[min(len(times) - 1, int(0.95 * len(times)))] * 1e3, 1),
    }


def measure(job_id: int, requests: int) -> dict[str, Any]:
    """GET the job page ``requests`` times as the team's member, after one warm-up GET:
    first each with the cache emptied before it (a first view: charts drawn), then as
    they come (later views; the same as the first where nothing is cached)."""
    from django.contrib.auth import get_user_model
    from django.core.cache import cache
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client()
    client.force_login(get_user_model().objects.get(username="bench"))
    url = f"/jobs/{job_id}/"
    first = client.get(url)
    assert first.status_code == 200, first.status_code
    cold, warm = [], []
    for times, clear in ((cold, True), (warm, False)):
        for _ in range(requests):
            if clear:
                cache.clear()  # the session is in the database: clearing keeps the login
            start = time.perf_counter()
            response = client.get(url)
            times.append(time.perf_counter() - start)
            assert response.status_code == 200
    cache.clear()
    with CaptureQueriesContext(connection) as queries:
        body = client.get(url).content
    return {
        "requests": requests,
        "first_view": _stats(cold),
        "later_views": _stats(warm),
        "bytes": len(body),
        "svg_bytes": sum(len(m) for m in _SVG.findall(body)),
        "charts": len(_SVG.findall(body)),
        "queries": len(queries),
    }


def _child(tree: Path, dbname: str, job_id: int, requests: int) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", str(tree), "--db", dbname]
    done = subprocess.run(
        [*command, "--job", str(job_id), "--requests", str(requests)],
        cwd=tree,
        env=_env(dbname),
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--measurements", type=int, default=5000)
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--tree", action="append", type=Path, help="a rocpath checkout to measure")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    parser.add_argument("--job", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child:  # measure one tree: import rocpath from it, not from this script's tree
        sys.path[:] = [str(args.child.resolve())] + [p for p in sys.path if p != str(ROOT)]
        import django

        django.setup()
        print(json.dumps(measure(args.job, args.requests)))
        return

    trees = [t.resolve() for t in (args.tree or [ROOT])]
    dbname = f"rocpath_bench_jobpage_{uuid.uuid4().hex[:8]}"
    subprocess.run(["psql", f"{PG}/postgres", "-qc", f"CREATE DATABASE {dbname}"], check=True)
    try:
        env = _env(dbname)
        manage = [sys.executable, "manage.py", "migrate", "-v0"]
        subprocess.run(manage, cwd=ROOT, env=env, check=True)
        os.environ.update(env)
        sys.path.insert(0, str(ROOT))
        import django

        django.setup()
        job_id = seed(args.measurements)
        from django.db import connection

        connection.close()
        print(f"job {job_id}: {args.measurements} measurements; {args.requests} GETs per round")
        for round_ in range(1, args.rounds + 1):
            for tree in trees:
                figures = _child(tree, dbname, job_id, args.requests)
                print(json.dumps({"round": round_, "tree": str(tree), **figures}), flush=True)
    finally:
        subprocess.run(
            ["psql", f"{PG}/postgres", "-qc", f"DROP DATABASE IF EXISTS {dbname} WITH (FORCE)"],
            check=False,
        )


if __name__ == "__main__":
    main()
