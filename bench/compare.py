"""Comparison and history at scale: 1,000,000 measurements with samples in PostgreSQL.

Seeds its own database (``rocpath_bench_compare_<jobs>x<cases>_v<SEED_VERSION>`` on the
shared server; never the portal's or a test database): 5 environments (two H200 stacks,
an MI300X, an MI250X, an A100), jobs spread evenly over them, each with ``--cases``
GEMM measurements of ``--samples`` raw samples, written with COPY. The seed is kept:
a rerun with the same sizes finds its marker table and only measures. ``--reseed``
drops it first.

Then, in-process through Django's test client (the whole request: middleware, session,
view, template, pygal; no HTTP socket), ``--requests`` times each after warm-up:

  compare API   /api/v1/compare/?jobs=A,B   two jobs x --cases cases
  compare page  /compare/?jobs=A,B          the same, table and charts
  history API   /api/v1/history/?…          one case over the newest 1,000 runs
  history page  /history/?…

Compare reads ratio intervals from the cache once computed (results.compare._ratios),
and history its change points, so "cold" is also measured: the first request of
--cold distinct job pairs never compared before in this process (the cache is the
process's local memory), and the first history request of --cold-history cases. The
anchor, in the same run, is GET /api/v1/kinds/ (authenticated, no database rows).

    .venv/bin/python bench/compare.py               # 5,000 jobs x 200 cases = 1,000,000
    .venv/bin/python bench/compare.py --requests 200

Goal (issue 12): p95 < 100 ms each; a constant number of queries (tests assert it).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SEED_VERSION = 1
PG = os.environ.get("BENCH_PG", "postgres://postgres@127.0.0.1:5432")
ENVIRONMENTS = [
    ("nvidia", "H200", "sm_90", {"cuda_version": "12.4", "libraries": {"cublas": "12.4.5"}}),
    ("nvidia", "H200", "sm_90", {"cuda_version": "12.6", "libraries": {"cublas": "12.6.4"}}),
    ("amd", "MI300X", "gfx942", {"rocm_version": "6.2.0", "libraries": {"rocblas": "4.2.0"}}),
    ("amd", "MI250X", "gfx90a", {"rocm_version": "6.2.0", "libraries": {"rocblas": "4.2.0"}}),
    ("nvidia", "A100", "sm_80", {"cuda_version": "12.4", "libraries": {"cublas": "12.4.5"}}),
]
PRECISIONS = ["fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8"]


def cases(n: int) -> list[dict]:
    out = []
    sizes = [64 * (i + 1) for i in range(64)]
    for backend in ("torch", "vendor-blas"):
        for precision in PRECISIONS:
            for size in sizes:
                out.append(
                    {"backend": backend, "precision": precision, "m": size, "n": size, "k": size}
                )
    return out[:n]


def setup_django(dbname: str) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings.base"
    os.environ["DATABASE_URL"] = f"{PG}/{dbname}"
    os.environ.setdefault("SECRET_KEY", "bench-only")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    os.environ["CACHE_URL"] = ""  # the process's local memory
    # The bench reads hundreds of times a minute from one user and address.
    os.environ["ROCPATH_THROTTLE_USER"] = "1000000/minute"
    os.environ["ROCPATH_THROTTLE_ADDRESS"] = "1000000/minute"
    import django

    django.setup()
    from django.conf import settings

    settings.ALLOWED_HOSTS = ["testserver"]
    # No collectstatic here: plain static URLs (the manifest's hashing is not measured).
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }


def ensure_database(dbname: str, reseed: bool) -> bool:
    """True when the seed is there already (its marker table says it finished)."""
    import psycopg

    with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (dbname,)).fetchone()
        if exists and reseed:
            conn.execute(f'DROP DATABASE "{dbname}"')
            exists = None
        if not exists:
            conn.execute(f'CREATE DATABASE "{dbname}"')
            return False
    with psycopg.connect(f"{PG}/{dbname}") as conn:
        done = conn.execute("SELECT to_regclass('bench_seed_done')").fetchone()[0]
    return done is not None


def seed(args: argparse.Namespace) -> None:
    from django.contrib.auth import get_user_model
    from django.db import connection

    from jobs.choices import JobStatus
    from jobs.models import Job
    from jobs.services import record_environment
    from stack.blas.gemm import FAMILY as GEMM
    from stack.kinds.blas_bench import KIND
    from teams.choices import Role
    from teams.models import Membership, Team

    started = time.perf_counter()
    team = Team.objects.create(name="Bench", slug="bench")
    user = get_user_model().objects.create_user(username="bench")  # signs in by force_login
    Membership.objects.create(team=team, user=user, role=Role.MEMBER)
    envs = [
        record_environment(
            {
                "host": {"hostname": f"node{i}"},
                "gpus": [{"vendor": v, "model": m, "arch": a}] * 8,
                "software": software,
            }
        )
        for i, (v, m, a, software) in enumerate(ENVIRONMENTS)
    ]
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    jobs = Job.objects.bulk_create(
        Job(
            kind=KIND.name,
            team=team,
            created_by=user,
            status=JobStatus.SUCCEEDED,
            timeout_s=3600,
            environment=envs[i % len(envs)],
            created_at=t0 + timedelta(minutes=10 * i),
            finished_at=t0 + timedelta(minutes=10 * i + 5),
        )
        for i in range(args.jobs)
    )
    rng = random.Random(12)
    speed = {e.pk: 0.6 + 0.2 * i for i, e in enumerate(envs)}
    all_cases = cases(args.cases)
    print(f"seeding {len(jobs) * len(all_cases):,} measurements…", flush=True)
    columns = ("job_id", "environment_id", "benchmark", '"case"', "metric", "unit", "value",
               "samples", "better", "created_at")  # fmt: skip
    with connection.cursor() as cursor:
        raw = cursor.connection
        with raw.cursor().copy(f"COPY jobs_measurement ({', '.join(columns)}) FROM STDIN") as copy:
            for job in jobs:
                env_id = job.environment_id
                drift = 0.9 if job.pk % 1000 > 700 else 1.0  # a planted step in history
                buf = io.StringIO()
                for case in all_cases:
                    level = case["m"] / 4096 * 500 * speed[env_id] * drift
                    samples = [round(level * rng.gauss(1, 0.02), 4) for _ in range(args.samples)]
                    buf.write(
                        "\t".join(
                            (
                                str(job.pk),
                                str(env_id),
                                GEMM,
                                json.dumps(case).replace("\\", "\\\\"),
                                "throughput",
                                "TOPS" if case["precision"] == "int8" else "TFLOP/s",
                                repr(statistics.median(samples)),
                                json.dumps(samples),
                                "higher",
                                job.created_at.isoformat(),
                            )
                        )
                        + "\n"
                    )
                copy.write(buf.getvalue())
        cursor.execute("ANALYZE jobs_measurement")
        cursor.execute("ANALYZE jobs_job")
        cursor.execute("CREATE TABLE bench_seed_done (at timestamptz)")
        cursor.execute("INSERT INTO bench_seed_done VALUES (now())")
    print(f"seeded in {time.perf_counter() - started:.0f} s", flush=True)


def p95(times: list[float]) -> float:
    return statistics.quantiles(times, n=20)[-1] if len(times) >= 20 else max(times)


def timed(client, url: str, n: int, warm: int = 5) -> dict:
    for _ in range(warm):
        assert client.get(url).status_code == 200, url
    times, cpu = [], []
    size = 0
    for _ in range(n):
        t, c = time.perf_counter(), time.process_time()
        response = client.get(url)
        times.append((time.perf_counter() - t) * 1000)
        cpu.append((time.process_time() - c) * 1000)
        assert response.status_code == 200, url
        size = len(response.content)
    return {
        "p50_ms": round(statistics.median(times), 1),
        "p95_ms": round(p95(times), 1),
        "max_ms": round(max(times), 1),
        # this process's CPU per request (not PostgreSQL's): the work, without the wait
        # for a CPU on a loaded machine
        "cpu_p50_ms": round(statistics.median(cpu), 1),
        "cpu_p95_ms": round(p95(cpu), 1),
        "bytes": size,
        "n": n,
    }


def measure(args: argparse.Namespace) -> dict:
    from urllib.parse import urlencode

    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from rest_framework.test import APIClient

    from jobs.models import Environment, Job, Measurement
    from stack.blas.gemm import FAMILY as GEMM

    user = get_user_model().objects.get(username="bench")
    page, api = Client(), APIClient()
    page.force_login(user)
    api.force_authenticate(user)
    ids = list(Job.objects.order_by("id").values_list("id", flat=True))
    count = Measurement.objects.count()
    a, b = ids[0], ids[2]  # an H200 and an MI300X
    query = f"jobs={a},{b}"
    fingerprint = Environment.objects.get(pk=Job.objects.get(pk=a).environment_id).fingerprint
    case = cases(args.cases)[args.cases // 2]
    history = urlencode(
        {
            "benchmark": GEMM,
            "metric": "throughput",
            "case": json.dumps(case),
            "fingerprint": fingerprint,
        }
    )
    report: dict = {
        "measurements": count,
        "jobs": len(ids),
        "cases": args.cases,
        "load average at start": os.getloadavg(),
        "cpus": os.cpu_count(),
    }
    # One request to load what a first request loads (URL conf, templates, schema).
    assert api.get(f"/api/v1/compare/?jobs={ids[-1]},{ids[-2]}").status_code == 200
    # cold: pairs never compared in this process
    cold = []
    for i in range(args.cold):
        url = f"/api/v1/compare/?jobs={ids[10 + 2 * i]},{ids[11 + 2 * i]}"
        t = time.perf_counter()
        assert api.get(url).status_code == 200
        cold.append((time.perf_counter() - t) * 1000)
    report["compare API, cold (first view of a pair)"] = {
        "p50_ms": round(statistics.median(cold), 1), "p95_ms": round(p95(cold), 1), "n": len(cold)
    }  # fmt: skip
    cold_history = []
    for i in range(args.cold_history):
        other = urlencode(
            {
                "benchmark": GEMM,
                "metric": "throughput",
                "case": json.dumps(cases(args.cases)[i]),
                "fingerprint": fingerprint,
            }
        )
        t = time.perf_counter()
        assert api.get(f"/api/v1/history/?{other}").status_code == 200
        cold_history.append((time.perf_counter() - t) * 1000)
    if cold_history:
        report["history API, cold (change points computed)"] = {
            "each_ms": [round(t) for t in cold_history]
        }
    # The anchor, in the same run: a trivial authenticated API read (the kinds list).
    report["anchor: GET /api/v1/kinds/"] = timed(api, "/api/v1/kinds/", args.requests)
    report["compare API"] = timed(api, f"/api/v1/compare/?{query}", args.requests)
    report["compare page"] = timed(page, f"/compare/?{query}", args.requests)
    report["history API"] = timed(api, f"/api/v1/history/?{history}", args.requests)
    report["history page"] = timed(page, f"/history/?{history}", args.requests)
    body = api.get(f"/api/v1/history/?{history}").json()
    report["history runs"] = len(body["points"])
    report["history change points"] = body["change_points"]
    for name, url, c in (
        ("compare API", f"/api/v1/compare/?{query}", api),
        ("compare page", f"/compare/?{query}", page),
        ("history API", f"/api/v1/history/?{history}", api),
        ("history page", f"/history/?{history}", page),
    ):
        with CaptureQueriesContext(connection) as queries:
            c.get(url)
        report[name]["queries"] = len(queries)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--cold", type=int, default=20)
    parser.add_argument("--cold-history", type=int, default=3)
    parser.add_argument("--reseed", action="store_true")
    args = parser.parse_args()
    dbname = f"rocpath_bench_compare_{args.jobs}x{args.cases}x{args.samples}_v{SEED_VERSION}"
    seeded = ensure_database(dbname, args.reseed)
    setup_django(dbname)
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    if not seeded:
        seed(args)
    else:
        print(f"reusing the seed in {dbname}", flush=True)
    report = measure(args)
    report["load average at end"] = os.getloadavg()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
