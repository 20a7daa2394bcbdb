"""What the baseline check adds to a job's conclude, and what the comparison costs.

    .venv/bin/python bench/baseline_check.py [--cases 100 --samples 50 --trials 30]

A throw-away PostgreSQL database (migrated) and a private Redis db; in this process,
a blas-bench-sized result (``--cases`` cases x 2 sampled metrics, ``--samples`` samples
each) is concluded the way the worker concludes it: ``ingest_result`` in one
transaction, the job-finished receivers run on its commit. Three conditions,
interleaved trial by trial (A B C A B C ...), so the machine's drift hits them alike:

  A  results' receiver disconnected (the conclude as it was before results existed)
  B  receiver connected, the job in no baseline's scope (one query)
  C  receiver connected, the job in a baseline's scope (one query + one enqueue to Redis)

and, apart, the comparison task's own work for a job of C (``services.compare_job``),
which runs in a Celery task after the conclude, not in it. Prints a JSON report.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

PG = os.environ.get("BENCH_PG", "postgres://postgres@127.0.0.1:5432")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=100)
    ap.add_argument("--samples", type=int, default=50)
    ap.add_argument("--trials", type=int, default=30)
    args = ap.parse_args()

    run_id = uuid.uuid4().hex[:8]
    dbname = f"rocpath_bench_{run_id}"
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings.base",
            "DATABASE_URL": f"{PG}/{dbname}",
            "CELERY_BROKER_URL": "redis://127.0.0.1:6379/13",
            "ROCPATH_QUEUE": f"bench-{run_id}",
            "ROCPATH_VAR_DIR": str(ROOT / "var" / f"bench-{run_id}"),
            "SECRET_KEY": "bench-only",
            "LOG_LEVEL": "WARNING",
        }
    )
    subprocess.run(["psql", f"{PG}/postgres", "-qc", f"CREATE DATABASE {dbname}"], check=True)
    try:
        report = run(args)
    finally:
        from django.db import connections

        connections.close_all()
        subprocess.run(
            ["psql", f"{PG}/postgres", "-qc", f"DROP DATABASE IF EXISTS {dbname} WITH (FORCE)"],
            check=False,
        )
    print(json.dumps(report, indent=2))
    return 0


def run(args: argparse.Namespace) -> dict:
    import django

    django.setup()
    import numpy as np
    from django.core.management import call_command
    from django.db import transaction

    from config.celery import app
    from jobs.choices import JobStatus
    from jobs.finished import job_finished
    from jobs.models import Job
    from jobs.services import ingest_result
    from results import receivers, services
    from teams.models import AdoptionProject, Team

    call_command("migrate", "-v0")
    rng = np.random.default_rng(0)
    team = Team.objects.create(name="bench", slug="bench")
    in_scope = AdoptionProject.objects.create(team=team, name="with a baseline")
    no_scope = AdoptionProject.objects.create(team=team, name="without")
    environment = {"host": {"hostname": "bench-box", "cpu_model": "bench"}, "gpus": []}

    def result(level: float) -> dict:
        measurements = []
        for c in range(args.cases):
            case = {"backend": "torch", "precision": "fp32", "m": 64 * (c + 1), "n": 1024}
            t = level * rng.lognormal(0.0, 0.02, args.samples)
            for metric, unit, better, xs in (
                ("time", "ms", "lower", t),
                ("throughput", "TFLOP/s", "higher", 1.0 / t),
            ):
                measurements.append(
                    {"benchmark": "gemm", "case": case, "metric": metric, "unit": unit,
                     "value": float(np.median(xs)), "samples": [float(x) for x in xs],
                     "better": better}
                )  # fmt: skip
        return {
            "schema_version": 1, "kind": "noop", "status": "succeeded",
            "started_at": "2026-01-01T00:00:00Z", "finished_at": "2026-01-01T00:00:01Z",
            "environment": environment, "measurements": measurements, "summary": {},
            "artifacts": [], "error": None,
        }  # fmt: skip

    def running(project: AdoptionProject) -> Job:
        return Job.objects.create(
            team=team, project=project, kind="noop", status=JobStatus.RUNNING, timeout_s=60
        )

    def conclude(project: AdoptionProject, doc: dict) -> tuple[float, int]:
        job = running(project)
        t0 = time.perf_counter()
        with transaction.atomic():  # the receivers run on this commit, inside the timing
            ingest_result(job, doc, None, exit_code=0)
        return time.perf_counter() - t0, job.pk

    base = running(in_scope)
    with transaction.atomic():
        ingest_result(base, result(1.0), None, exit_code=0)
    services.pin_baseline(Job.objects.get(pk=base.pk))

    docs = [result(1.0 if k % 2 else 1.1) for k in range(4)]
    times: dict[str, list[float]] = {"A": [], "B": [], "C": []}
    compared: list[int] = []
    for trial in range(args.trials + 2):  # the first two warm caches and connections
        doc = docs[trial % len(docs)]
        job_finished.disconnect(dispatch_uid="results.job_finished")
        a, _ = conclude(no_scope, doc)
        job_finished.connect(receivers.on_job_finished, dispatch_uid="results.job_finished")
        b, _ = conclude(no_scope, doc)
        c, job_id = conclude(in_scope, doc)
        if trial >= 2:
            times["A"].append(a)
            times["B"].append(b)
            times["C"].append(c)
            compared.append(job_id)
    compare_s = []
    for job_id in compared[:10]:
        t0 = time.perf_counter()
        written = services.compare_job(job_id)
        compare_s.append(time.perf_counter() - t0)
    with app.connection_for_write() as conn:  # the queued comparisons nobody will run
        conn.default_channel.queue_purge(os.environ["ROCPATH_QUEUE"])

    def ms(xs: list[float]) -> dict[str, float]:
        return {"median_ms": round(1000 * statistics.median(xs), 2),
                "p90_ms": round(1000 * sorted(xs)[int(0.9 * (len(xs) - 1))], 2)}  # fmt: skip

    med = {k: statistics.median(v) for k, v in times.items()}
    return {
        "cases": args.cases,
        "sampled_measurements": 2 * args.cases,
        "samples_each": args.samples,
        "trials": args.trials,
        "A_receiver_off": ms(times["A"]),
        "B_no_baseline_in_scope": ms(times["B"]),
        "C_baseline_in_scope": ms(times["C"]),
        "B_over_A": round(med["B"] / med["A"], 3),
        "C_over_A": round(med["C"] / med["A"], 3),
        "compare_task": ms(compare_s) | {"verdicts_per_job": len(written)},
    }


if __name__ == "__main__":
    sys.exit(main())
