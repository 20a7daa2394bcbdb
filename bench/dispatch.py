"""Dispatch throughput: N no-op jobs through REST → Celery → local executor → ingested.

In the same run, the same number of bare Celery no-op tasks on the same broker
(the anchor: what Celery and Redis cost alone), then the ratio. Everything runs
against its own PostgreSQL database and Redis db, with its own gunicorn and
worker processes on 127.0.0.1, and is torn down at the end.

    .venv/bin/python bench/dispatch.py --jobs 300

Goal (issue 2): at least 50 no-op jobs/s on a 2-core machine.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds_by_role(procs: dict[str, int]) -> dict[str, float]:
    """CPU seconds used so far by each role: its process group, or processes by name."""
    ticks = os.sysconf("SC_CLK_TCK")
    totals = dict.fromkeys([*procs, "postgres", "redis", "other"], 0.0)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat.rsplit(")", 1)[1].split()
        # utime + stime, plus cutime + cstime: children it has waited for (the runners)
        used = sum(int(f) for f in fields[11:15]) / ticks
        role = next((r for r, pgid in procs.items() if int(fields[2]) == pgid), None)
        if role == "worker" and b"stack.zygote" in _cmdline(entry):
            role = "runners (zygote + its children)"
            totals.setdefault(role, 0.0)
        if role is None:
            role = (
                "postgres"
                if name.startswith("postgres")
                else "redis"
                if "redis" in name
                else "other"
            )
        totals[role] += used
    return totals


def _cmdline(entry: Path) -> bytes:
    try:
        return (entry / "cmdline").read_bytes()
    except OSError:
        return b""


def machine_busy() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot, from /proc/stat."""
    ticks = os.sysconf("SC_CLK_TCK")
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]
    return (sum(values) - idle) / ticks, sum(values) / ticks


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=300)
    parser.add_argument("--clients", type=int, default=8, help="concurrent REST clients")
    parser.add_argument("--concurrency", type=int, default=4, help="worker processes")
    parser.add_argument("--web-workers", type=int, default=2)
    parser.add_argument("--web-threads", type=int, default=4)
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/14")
    args = parser.parse_args()

    run_id = uuid.uuid4().hex[:8]
    dbname = f"rocpath_bench_{run_id}"
    var = ROOT / "var" / f"bench-{run_id}"
    queue = f"bench-{run_id}"
    env = dict(os.environ)
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings.base",
            "DATABASE_URL": f"{args.pg}/{dbname}",
            "CELERY_BROKER_URL": args.redis,
            "CELERY_RESULT_BACKEND": args.redis,
            "ROCPATH_QUEUE": queue,
            "ROCPATH_VAR_DIR": str(var),
            "SECRET_KEY": "bench-only",
            "LOG_LEVEL": "WARNING",
        }
    )
    os.environ.update(env)
    subprocess.run(["psql", args.pg + "/postgres", "-qc", f"CREATE DATABASE {dbname}"], check=True)
    procs: list[subprocess.Popen] = []
    try:
        manage = [sys.executable, "manage.py"]
        subprocess.run([*manage, "migrate", "-v0"], cwd=ROOT, env=env, check=True)
        setup = (
            "from django.contrib.auth.models import User;"
            "from portal.models import Team, Membership;"
            "from rest_framework.authtoken.models import Token;"
            "u=User.objects.create_user('bench');"
            "t=Team.objects.create(name='bench', slug='bench');"
            "Membership.objects.create(team=t, user=u, role='member');"
            "print(Token.objects.create(user=u).key)"
        )
        token = (
            subprocess.run(
                [*manage, "shell", "-c", setup],
                cwd=ROOT,
                env=env,
                check=True,
                capture_output=True,
                text=True,
            )
            .stdout.strip()
            .splitlines()[-1]
        )
        port = free_port()
        logs = var / "log"
        logs.mkdir(parents=True, exist_ok=True)
        procs.append(
            subprocess.Popen(
                [
                    str(BIN / "gunicorn"),
                    "config.wsgi",
                    "--bind",
                    f"127.0.0.1:{port}",
                    "--workers",
                    "2",
                    "--threads",
                    "4",
                    "--error-logfile",
                    str(logs / "web.log"),
                ],
                cwd=ROOT,
                env=env,
                start_new_session=True,
            )
        )
        procs.append(
            subprocess.Popen(
                [
                    str(BIN / "celery"),
                    "-A",
                    "config",
                    "worker",
                    "-Q",
                    queue,
                    "-c",
                    str(args.concurrency),
                    "-n",
                    f"{queue}@%h",
                    "--without-gossip",
                    "--without-mingle",
                    "-l",
                    "WARNING",
                    "--logfile",
                    str(logs / "worker.log"),
                ],
                cwd=ROOT,
                env=env,
                start_new_session=True,
            )
        )

        import django

        django.setup()
        from jobs.models import Job
        from jobs.tasks import noop_task

        wait_for_http(port)
        noop_task.apply_async(queue=queue).get(timeout=60)  # the worker is up

        # --- anchor: bare Celery tasks -------------------------------------------
        started = time.perf_counter()
        results = [noop_task.apply_async(queue=queue) for _ in range(args.jobs)]
        for result in results:
            result.get(timeout=300)
        bare_s = time.perf_counter() - started

        # --- rocpath jobs through REST ---------------------------------------------
        roles = {"web": procs[0].pid, "worker": procs[1].pid}
        cpu_before = cpu_seconds_by_role(roles)
        busy_before = machine_busy()
        client_before = time.process_time()

        def submit(_: int) -> tuple[int, float]:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            body = json.dumps({"kind": "noop", "params": {}})
            sent = time.time()
            conn.request(
                "POST",
                "/api/v1/jobs/",
                body,
                {"Authorization": f"Token {token}", "Content-Type": "application/json"},
            )
            response = conn.getresponse()
            payload = json.loads(response.read())
            if response.status != 201:
                raise RuntimeError(f"submit failed: {response.status} {payload}")
            return payload["id"], sent

        started = time.perf_counter()
        with ThreadPoolExecutor(args.clients) as pool:
            submitted = dict(pool.map(submit, range(args.jobs)))
        submit_s = time.perf_counter() - started
        ids = list(submitted)
        while Job.objects.filter(pk__in=ids, status__in=["pending", "queued", "running"]).exists():
            time.sleep(0.05)
        jobs_s = time.perf_counter() - started
        cpu_after = cpu_seconds_by_role(roles)
        busy_after = machine_busy()
        cpu_ms_per_job = {
            role: round((cpu_after[role] - cpu_before.get(role, 0.0)) * 1000 / args.jobs, 1)
            for role in cpu_after
        }
        cpu_ms_per_job["bench client"] = round(
            (time.process_time() - client_before) * 1000 / args.jobs, 1
        )

        rows = list(Job.objects.filter(pk__in=ids).values("id", "status", "started_at"))
        statuses = {r["status"] for r in rows}
        latencies = [
            r["started_at"].timestamp() - submitted[r["id"]] for r in rows if r["started_at"]
        ]
        report = {
            "jobs": args.jobs,
            "clients": args.clients,
            "worker_concurrency": args.concurrency,
            "statuses": sorted(statuses),
            "rocpath_jobs_per_s": round(args.jobs / jobs_s, 1),
            "rest_submits_per_s": round(args.jobs / submit_s, 1),
            "bare_celery_tasks_per_s": round(args.jobs / bare_s, 1),
            "ratio_jobs_to_bare": round((args.jobs / jobs_s) / (args.jobs / bare_s), 3),
            "submit_to_running_p50_ms": round(statistics.median(latencies) * 1000, 1),
            "submit_to_running_p95_ms": round(pct(latencies, 0.95) * 1000, 1),
            "cpus": os.cpu_count(),
            "cpu_ms_per_job": cpu_ms_per_job,
            "machine_busy_pct": round(
                100 * (busy_after[0] - busy_before[0]) / (busy_after[1] - busy_before[1]), 1
            ),
        }
        print(json.dumps(report, indent=2))
        if statuses != {"succeeded"}:
            sys.exit("some jobs did not succeed: " + ", ".join(sorted(statuses)))
    finally:
        for proc in procs:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(proc.pid, signal.SIGKILL)
        from django.db import connections

        connections.close_all()
        subprocess.run(
            [
                "psql",
                args.pg + "/postgres",
                "-qc",
                f"DROP DATABASE IF EXISTS {dbname} WITH (FORCE)",
            ],
            check=False,
        )
        subprocess.run(["rm", "-rf", str(var)], check=False)


def wait_for_http(port: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError("web server did not start")


if __name__ == "__main__":
    main()
