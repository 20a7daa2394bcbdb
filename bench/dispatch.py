"""Dispatch throughput: N no-op jobs through REST → Celery → local executor → ingested.

In the same run, the same number of bare Celery no-op tasks on the same broker
(the anchor: what Celery and Redis cost alone), then the ratio. Everything runs
against its own PostgreSQL database and Redis db, with its own gunicorn and
worker processes on 127.0.0.1, and is torn down at the end.

    .venv/bin/python bench/dispatch.py --jobs 300

Goal (issue 2): at least 50 no-op jobs/s on a 2-core machine.

On the Slurm executor (issue 16), against a private one-node Slurm cluster started for
the run (tests/slurmcluster.py):

    .venv/bin/python bench/dispatch.py --executor slurm --jobs 20

the no-op jobs go REST → Celery → sbatch → slurmd → ingested one after the other, and
the anchor is the same batch script (the executor's own, sandbox included) submitted
with the same options by a bare `sbatch --wait`, as many times; the ratio is of the
median per-job latencies (goal: at most 1.2). Then the same N of each at once, for
throughput.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import BenchStack

if TYPE_CHECKING:
    from jobs.executors.base import JobSpec


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
    parser.add_argument(
        "--rate", type=float, default=0, help="submissions per second (0: as fast as possible)"
    )
    parser.add_argument("--web-workers", type=int, default=2)
    parser.add_argument("--web-threads", type=int, default=4)
    parser.add_argument(
        "--executor",
        choices=("local", "slurm"),
        default="local",
        help="slurm: against a private Slurm cluster, with bare `sbatch --wait` as the anchor",
    )
    parser.add_argument(
        "--slurm-scheduler-parameters",
        default="",
        help="the private cluster's SchedulerParameters (e.g. batch_sched_delay=0)",
    )
    args = parser.parse_args()
    if args.executor == "slurm":
        slurm_main(args)
        return

    with BenchStack(
        executor="local",
        concurrency=args.concurrency,
        web_workers=args.web_workers,
        web_threads=args.web_threads,
    ) as stack:
        from jobs.models import Job
        from jobs.tasks import noop_task

        # --- anchor: bare Celery tasks on the same broker ----------------------------
        started = time.perf_counter()
        results = [noop_task.apply_async(queue=stack.queue) for _ in range(args.jobs)]
        for result in results:
            result.get(timeout=300)
        bare_s = time.perf_counter() - started

        # --- rocpath jobs through REST ------------------------------------------------
        roles = {"web": stack.procs["web"].pid, "worker": stack.procs["worker"].pid}
        cpu_before = cpu_seconds_by_role(roles)
        busy_before = machine_busy()
        client_before = time.process_time()
        started = time.perf_counter()

        def paced(i: int) -> tuple[int, float]:
            if args.rate:  # an open-loop arrival rate, for latency below saturation
                time.sleep(max(0.0, started + i / args.rate - time.perf_counter()))
            return stack.submit({"kind": "noop"})

        with ThreadPoolExecutor(args.clients) as pool:
            submitted = dict(pool.map(paced, range(args.jobs)))
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
        statuses = sorted({r["status"] for r in rows})
        latencies = [
            r["started_at"].timestamp() - submitted[r["id"]] for r in rows if r["started_at"]
        ]
        report = {
            "jobs": args.jobs,
            "clients": args.clients,
            "rate": args.rate or "as fast as possible",
            "worker_concurrency": args.concurrency,
            "web": f"{args.web_workers} gunicorn workers x {args.web_threads} threads",
            "statuses": statuses,
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
        if statuses != ["succeeded"]:
            sys.exit("some jobs did not succeed: " + ", ".join(statuses))


def wait_ended(ids: list[int], poll_s: float = 0.01) -> None:
    from jobs.models import Job

    while Job.objects.filter(pk__in=ids, status__in=["pending", "queued", "running"]).exists():
        time.sleep(poll_s)


def anchor_spec(index: int) -> JobSpec:
    """A noop job's folder as the executor lays it out, outside rocpath's jobs."""
    from django.conf import settings

    from jobs.executors.base import JobSpec
    from jobs.executors.slurm import SlurmExecutor

    folder = Path(settings.ARTIFACT_ROOT) / "sbatch-anchor" / str(index)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "params.json").write_text("{}")
    spec = JobSpec(job_id=900000 + index, kind="noop", job_dir=folder, timeout_s=600)
    SlurmExecutor().prepare(spec)  # out/, work/ and the batch script, as for a job
    return spec


def bare_sbatch(spec: JobSpec) -> float:
    """One `sbatch --wait` of the executor's batch script and options; its seconds."""
    from jobs.executors.slurm import client_env, sbatch_argv

    argv = sbatch_argv(spec)
    argv[1:2] = ["--wait", "--quiet"]  # instead of --parsable: wait for the end
    started = time.perf_counter()
    done = subprocess.run(argv, env=client_env(), capture_output=True, text=True, check=False)
    took = time.perf_counter() - started
    if done.returncode != 0 or not (spec.out_dir / "result.json").exists():
        raise RuntimeError(f"sbatch --wait failed ({done.returncode}): {done.stderr}")
    (spec.out_dir / "result.json").unlink()
    return took


def polled_sbatch(spec: JobSpec, poll_s: float = 0.05) -> float:
    """sbatch --parsable, then squeue every 50 ms until the job ended: what a client that
    polls tightly sees, Slurm's own scheduling and run of the job plus at most poll_s."""
    from jobs.executors.slurm import ENDED, client_env, current_state, sbatch_argv

    started = time.perf_counter()
    done = subprocess.run(
        sbatch_argv(spec), env=client_env(), capture_output=True, text=True, check=True
    )
    slurm_id = done.stdout.strip().split(";")[0]
    while (state := current_state(slurm_id)) is not None and state.state not in ENDED:
        time.sleep(poll_s)
    took = time.perf_counter() - started
    (spec.out_dir / "result.json").unlink()
    return took


def slurm_main(args: argparse.Namespace) -> None:
    """Per-job latency, one at a time, of rocpath on Slurm and of bare sbatch --wait."""
    with BenchStack(
        executor="slurm",
        concurrency=args.concurrency,
        web_workers=args.web_workers,
        web_threads=args.web_threads,
        slurm=True,
        slurm_scheduler_parameters=args.slurm_scheduler_parameters,
    ) as stack:
        from jobs.models import Job

        # --- rocpath jobs, one after the other ---------------------------------------------
        stack.submit({"kind": "noop"})  # a first job: imports, the sandbox's self-test
        wait_ended(list(Job.objects.values_list("pk", flat=True)))
        rocpath_s, ids = [], []
        for _ in range(args.jobs):
            started = time.perf_counter()
            job_id, _ = stack.submit({"kind": "noop"})
            wait_ended([job_id])
            rocpath_s.append(time.perf_counter() - started)
            ids.append(job_id)
        statuses = sorted(set(Job.objects.filter(pk__in=ids).values_list("status", flat=True)))

        # --- the anchor: the same script by bare sbatch --wait, one after the other --------
        specs = [anchor_spec(i) for i in range(args.jobs)]
        bare_sbatch(specs[0])  # the same warm-up
        sbatch_s = [bare_sbatch(spec) for spec in specs]
        polled_s = [polled_sbatch(spec) for spec in specs]

        # --- throughput: N of each at once -------------------------------------------------
        started = time.perf_counter()
        with ThreadPoolExecutor(args.clients) as pool:
            burst = [
                job_id
                for job_id, _ in pool.map(
                    lambda _: stack.submit({"kind": "noop"}), range(args.jobs)
                )
            ]
        wait_ended(burst)
        rocpath_burst_s = time.perf_counter() - started
        started = time.perf_counter()
        with ThreadPoolExecutor(args.jobs) as pool:
            list(pool.map(bare_sbatch, specs))
        sbatch_burst_s = time.perf_counter() - started

        rocpath_p50, sbatch_p50 = statistics.median(rocpath_s), statistics.median(sbatch_s)
        report = {
            "executor": "slurm",
            "slurm": "Debian slurm-wlm 22.05, one node (2 CPUs), private cluster",
            "jobs": args.jobs,
            "statuses": statuses,
            "poll_s": float(os.environ.get("ROCPATH_SLURM_POLL_MS", "250")) / 1000,
            "rocpath_per_job_p50_ms": round(rocpath_p50 * 1000, 1),
            "rocpath_per_job_p95_ms": round(pct(rocpath_s, 0.95) * 1000, 1),
            "sbatch_wait_per_job_p50_ms": round(sbatch_p50 * 1000, 1),
            "sbatch_wait_per_job_p95_ms": round(pct(sbatch_s, 0.95) * 1000, 1),
            "ratio_rocpath_to_sbatch_wait_p50": round(rocpath_p50 / sbatch_p50, 3),
            # the mean is the sequence's total time per job: sbatch --wait's is bimodal
            # (it polls after 2 s, then less often), which its median hides
            "rocpath_per_job_mean_ms": round(statistics.mean(rocpath_s) * 1000, 1),
            "sbatch_wait_per_job_mean_ms": round(statistics.mean(sbatch_s) * 1000, 1),
            "ratio_rocpath_to_sbatch_wait_mean": round(
                statistics.mean(rocpath_s) / statistics.mean(sbatch_s), 3
            ),
            "sbatch_polled_50ms_per_job_p50_ms": round(statistics.median(polled_s) * 1000, 1),
            "sbatch_polled_50ms_per_job_p95_ms": round(pct(polled_s, 0.95) * 1000, 1),
            "ratio_rocpath_to_polled_p50": round(rocpath_p50 / statistics.median(polled_s), 3),
            "scheduler_parameters": args.slurm_scheduler_parameters or "Slurm's defaults",
            "burst_rocpath_jobs_per_s": round(args.jobs / rocpath_burst_s, 2),
            "burst_sbatch_wait_jobs_per_s": round(args.jobs / sbatch_burst_s, 2),
            "burst_clients": args.clients,
            "worker_concurrency": args.concurrency,
            "cpus": os.cpu_count(),
            "per_job_ms": {
                "rocpath": [round(t * 1000) for t in rocpath_s],
                "sbatch_wait": [round(t * 1000) for t in sbatch_s],
                "sbatch_polled_50ms": [round(t * 1000) for t in polled_s],
            },
        }
        print(json.dumps(report, indent=2))
        if statuses != ["succeeded"]:
            sys.exit("some jobs did not succeed: " + ", ".join(statuses))


if __name__ == "__main__":
    main()
