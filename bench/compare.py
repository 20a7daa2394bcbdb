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
--cold distinct job pairs never compared before (the cache, settings.CACHES["results"],
starts empty: a fresh ROCPATH_VAR_DIR per run), and the first history request of
--cold-history cases. The anchor, in the same run, is GET /api/v1/kinds/
(authenticated, no database rows).

--http (issue 39): the same over HTTP, against a real gunicorn on 127.0.0.1 started as
`make run` starts it (config.settings.base, `--workers 2 --threads 4`, static files
collected where make run collects them), signed in by a session cookie:

  distinct pairs   --requests job pairs never compared, each requested once (API, and
                   other pairs for the page): what a team clicking through its runs waits
  distinct series  --requests (case, environment) histories never viewed, API and page
  same URL         --requests of one pair / one history, after warm-up
  4,000 cases      --big-cases cases: two jobs (API, then the page on two others), the
                   first request and the second; and 8 jobs at once (API)

The 4,000-case jobs (--big-jobs, on an environment of their own, so no history changes)
are added to the seed once. --cache-url redis://…/<db> runs the server with CACHE_URL (the
comparisons' cache in Redis; that database is emptied first: give the bench its own);
without it, the embedded defaults' file cache in a fresh folder. --json writes the report.

    .venv/bin/python bench/compare.py               # 5,000 jobs x 200 cases = 1,000,000
    .venv/bin/python bench/compare.py --requests 200
    .venv/bin/python bench/compare.py --http --requests 100 --json docs/results/compare/x.json

Goals: in-process p95 < 100 ms each (issue 12); over HTTP, distinct pairs and series
p95 < 300 ms and a 4,000-case comparison warm on its second request (issue 39).
"""

from __future__ import annotations

import argparse
import atexit
import io
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

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
    """n GEMM cases; past the 896 of (backend, precision, size), batched ones (batch 2, 3…)."""
    out = []
    sizes = [64 * (i + 1) for i in range(64)]
    for backend in ("torch", "vendor-blas"):
        for precision in PRECISIONS:
            for size in sizes:
                out.append(
                    {"backend": backend, "precision": precision, "m": size, "n": size, "k": size}
                )
    batch = 2
    while len(out) < n:
        for precision in PRECISIONS:
            for size in sizes:
                out.append(
                    {"backend": "vendor-blas", "batch": batch, "precision": precision,
                     "m": size, "n": size, "k": size}
                )  # fmt: skip
        batch += 1
    return out[:n]


def setup_django(dbname: str) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings.base"
    os.environ["DATABASE_URL"] = f"{PG}/{dbname}"
    os.environ.setdefault("SECRET_KEY", "bench-only")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    os.environ["CACHE_URL"] = ""  # the embedded defaults' caches…
    # …in a folder of this run's own: a rerun starts cold (the file cache persists)
    var = tempfile.mkdtemp(prefix="rocpath-bench-compare-")
    os.environ["ROCPATH_VAR_DIR"] = var
    atexit.register(shutil.rmtree, var, ignore_errors=True)
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
    speed = {e.pk: 0.6 + 0.2 * i for i, e in enumerate(envs)}
    print(f"seeding {len(jobs) * args.cases:,} measurements…", flush=True)
    copy_measurements(jobs, cases(args.cases), args.samples, speed, random.Random(12))
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE bench_seed_done (at timestamptz)")
        cursor.execute("INSERT INTO bench_seed_done VALUES (now())")
    print(f"seeded in {time.perf_counter() - started:.0f} s", flush=True)


def copy_measurements(jobs: list, all_cases: list[dict], n_samples: int, speed: dict,
                      rng: random.Random) -> None:  # fmt: skip
    """Each job's measurements of every case, written with COPY, then ANALYZE."""
    from django.db import connection

    from stack.blas.gemm import FAMILY as GEMM

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
                    samples = [round(level * rng.gauss(1, 0.02), 4) for _ in range(n_samples)]
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


def seed_big(args: argparse.Namespace) -> list[int]:
    """--big-jobs jobs of --big-cases cases each, on an environment of their own (once)."""
    from django.contrib.auth import get_user_model
    from django.db import connection

    from jobs.choices import JobStatus
    from jobs.models import Job
    from jobs.services import record_environment
    from stack.kinds.blas_bench import KIND
    from teams.models import Team

    host = f"big-{args.big_jobs}x{args.big_cases}"
    found = list(
        Job.objects.filter(environment__data__host__hostname=host)
        .order_by("created_at", "id")
        .values_list("id", flat=True)
    )
    if len(found) == args.big_jobs:
        return found
    vendor, model, arch, software = ENVIRONMENTS[0]
    env = record_environment(
        {
            "host": {"hostname": host},
            "gpus": [{"vendor": vendor, "model": model, "arch": arch}] * 8,
            "software": software,
        }
    )
    team = Team.objects.get(slug="bench")
    user = get_user_model().objects.get(username="bench")
    t0 = datetime(2026, 6, 1, tzinfo=UTC)
    jobs = Job.objects.bulk_create(
        Job(
            kind=KIND.name, team=team, created_by=user, status=JobStatus.SUCCEEDED,
            timeout_s=3600, environment=env, created_at=t0 + timedelta(minutes=10 * i),
            finished_at=t0 + timedelta(minutes=10 * i + 5),
        )
        for i in range(args.big_jobs)
    )  # fmt: skip
    print(f"seeding {args.big_jobs} jobs x {args.big_cases:,} cases…", flush=True)
    copy_measurements(jobs, cases(args.big_cases), args.samples, {env.pk: 1.0}, random.Random(39))
    connection.close()
    return [j.pk for j in jobs]


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


# -- over HTTP (issue 39) -----------------------------------------------------------------


def static_root() -> str:
    """Where make run collects the static files (scripts/run.sh: the same key), collected
    here once when it has not yet: the server serves pages as make run's does."""
    key = subprocess.run(
        ["bash", "-c", "{ cat requirements.txt config/staticfiles.py; find static -type f "
         "-print0 | sort -z | xargs -0 sha256sum; } | sha256sum | cut -c1-16"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    cache = os.environ.get("ROCPATH_CACHE_DIR") or str(Path.home() / ".cache" / "rocpath")
    root = os.environ.get("ROCPATH_STATIC_ROOT") or f"{cache}/static-{key}"
    marker = Path(root) / ".collected"
    if not (marker.exists() and marker.read_text().strip() == key):
        print(f"collecting static files into {root} (as make run does)", flush=True)
        env = {**os.environ, "ROCPATH_STATIC_ROOT": root}
        subprocess.run(
            [sys.executable, "manage.py", "collectstatic", "--no-input", "-v", "0"],
            cwd=ROOT, env=env, check=True,
        )  # fmt: skip
        marker.write_text(key + "\n")
    return root


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def clear_redis(url: str) -> int:
    """Empty the bench's Redis database (give it one of its own): the comparisons'
    intervals and the charts a previous run drew there would make "first viewed" warm."""
    import redis

    client = redis.Redis.from_url(url)
    keys = client.dbsize()
    client.flushdb()
    return keys


class Server:
    """gunicorn as make run starts it (scripts/run.sh run_web), on a free 127.0.0.1 port."""

    def __init__(self, dbname: str, cache_url: str) -> None:
        self.port = free_port()
        self.var = tempfile.mkdtemp(prefix="rocpath-bench-http-")
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings.base",
            "DATABASE_URL": f"{PG}/{dbname}",
            "CACHE_URL": cache_url,
            "ROCPATH_VAR_DIR": self.var,
            "ROCPATH_STATIC_ROOT": static_root(),
            "ALLOWED_HOSTS": "127.0.0.1",
        }
        self.log = Path(self.var) / "web.log"
        self.proc = subprocess.Popen(
            [str(ROOT / ".venv/bin/gunicorn"), "config.wsgi", "--bind",
             f"127.0.0.1:{self.port}", "--workers", "2", "--threads", "4",
             "--graceful-timeout", "5", "--error-logfile", "-"],
            cwd=ROOT, env=env, stdout=self.log.open("w"), stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        self.base = f"http://127.0.0.1:{self.port}"

    def wait(self, session: Any, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gunicorn exited:\n{self.log.read_text()[-3000:]}")
            try:
                session.get(f"{self.base}/healthz", timeout=2)
                return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("gunicorn did not answer")

    def stop(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=15)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(self.proc.pid, signal.SIGKILL)
        shutil.rmtree(self.var, ignore_errors=True)


def _summary(times: list[float]) -> dict:
    return {
        "p50_ms": round(statistics.median(times), 1),
        "p95_ms": round(p95(times), 1),
        "max_ms": round(max(times), 1),
        "n": len(times),
    }


def http_measure(args: argparse.Namespace, dbname: str, big: list[int]) -> dict:
    """The figures over HTTP against a gunicorn of its own (see the module's docstring)."""
    from urllib.parse import urlencode

    import requests
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client

    from jobs.models import Environment, Job, Measurement
    from stack.blas.gemm import FAMILY as GEMM

    user = get_user_model().objects.get(username="bench")
    login = Client()
    login.force_login(user)  # a session row the server reads: the cookie signs it in
    cookie = login.cookies[settings.SESSION_COOKIE_NAME].value
    big_ids = set(big)
    ids = [
        pk for pk in Job.objects.order_by("id").values_list("id", flat=True) if pk not in big_ids
    ]
    # jobs go round the five environments: the first five are one on each
    envs = [Job.objects.select_related("environment").get(pk=pk).environment for pk in ids[:5]]
    report: dict = {
        "mode": "http: gunicorn config.wsgi --workers 2 --threads 4 on 127.0.0.1",
        "cache": "CACHE_URL=" + args.cache_url if args.cache_url else "embedded (file cache)",
        "measurements": Measurement.objects.count(),
        "jobs": len(ids) + len(big),
        "cases": args.cases,
        "load average at start": os.getloadavg(),
        "cpus": os.cpu_count(),
    }
    if args.cache_url:
        report["redis keys deleted first"] = clear_redis(args.cache_url)
    # A SIGTERM (a kill of the bench) ends the run through the finally: the server stops.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    server = Server(dbname, args.cache_url)
    session = requests.Session()
    session.cookies.set(settings.SESSION_COOKIE_NAME, cookie)
    try:
        server.wait(session)

        def get(path: str) -> tuple[float, int]:
            t = time.perf_counter()
            response = session.get(server.base + path, timeout=600)
            took = (time.perf_counter() - t) * 1000
            assert response.status_code == 200, (path, response.status_code, response.text[:300])
            return took, len(response.content)

        def history_url(path: str, case: dict, env: Environment) -> str:
            query = {"benchmark": GEMM, "metric": "throughput", "case": json.dumps(case),
                     "fingerprint": env.fingerprint}  # fmt: skip
            return f"{path}?{urlencode(query)}"

        # Both server processes load what a first request loads (URL conf, templates).
        for _ in range(4):
            get(f"/api/v1/compare/?jobs={ids[-1]},{ids[-2]}")
            get(f"/compare/?jobs={ids[-1]},{ids[-2]}")
            get(history_url("/history/", cases(args.cases)[-1], envs[-1]))
        n = args.requests
        report["anchor: GET /api/v1/kinds/"] = _summary(
            [get("/api/v1/kinds/")[0] for _ in range(n)]
        )
        # distinct pairs: each pair once, never compared before (jobs 10… of the seed)
        for name, path, offset in (("compare API", "/api/v1/compare/", 10),
                                   ("compare page", "/compare/", 10 + 2 * n)):  # fmt: skip
            times = [get(f"{path}?jobs={ids[offset + 2 * i]},{ids[offset + 2 * i + 1]}")[0]
                     for i in range(n)]  # fmt: skip
            report[f"{name}, distinct pairs (each first viewed)"] = _summary(times)
        # distinct series: (case, environment) histories never viewed, API then page
        series = [(c, e) for c in cases(args.cases) for e in envs]
        random.Random(3).shuffle(series)
        for name, path, part in (("history API", "/api/v1/history/", series[:n]),
                                 ("history page", "/history/", series[n : 2 * n])):  # fmt: skip
            times = [get(history_url(path, c, e))[0] for c, e in part]
            report[f"{name}, distinct series (each first viewed)"] = _summary(times)
        # the same URL again and again (warm)
        pair = f"jobs={ids[0]},{ids[2]}"
        one = (cases(args.cases)[args.cases // 2], envs[0])
        for name, path in (("compare API", f"/api/v1/compare/?{pair}"),
                           ("compare page", f"/compare/?{pair}"),
                           ("history API", history_url("/api/v1/history/", *one)),
                           ("history page", history_url("/history/", *one))):  # fmt: skip
            for _ in range(5):
                get(path)
            report[f"{name}, same URL (warm)"] = _summary([get(path)[0] for _ in range(n)])
        # 4,000 cases: the first request and the second
        if len(big) >= 4:
            for name, path in (("API, 2 jobs", f"/api/v1/compare/?jobs={big[0]},{big[1]}"),
                               ("page, 2 jobs", f"/compare/?jobs={big[2]},{big[3]}"),
                               ("API, 8 jobs", "/api/v1/compare/?jobs="
                                + ",".join(map(str, big[:8])))):  # fmt: skip
                first, size = get(path)
                second, _ = get(path)
                third, _ = get(path)
                report[f"{args.big_cases:,} cases, {name}"] = {
                    "first_ms": round(first), "second_ms": round(second),
                    "third_ms": round(third), "bytes": size,
                }  # fmt: skip
    finally:
        server.stop()
    report["load average at end"] = os.getloadavg()
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
    parser.add_argument("--http", action="store_true", help="over HTTP against gunicorn")
    parser.add_argument("--cache-url", default="", help="the server's CACHE_URL (--http)")
    parser.add_argument("--big-cases", type=int, default=4000)
    parser.add_argument("--big-jobs", type=int, default=8)
    parser.add_argument("--json", default="", help="also write the report to this file")
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
    if args.http:
        big = seed_big(args) if args.big_jobs and args.big_cases else []
        report = {
            "command": "bench/compare.py " + " ".join(sys.argv[1:]),
            "database": dbname,
            **http_measure(args, dbname, big),
        }
    else:
        report = measure(args)
        report["load average at end"] = os.getloadavg()
    print(json.dumps(report, indent=2))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
