"""/metrics scrape time against a seeded jobs table, through gunicorn, over HTTP.

A throw-away stack (bench/harness.py: its own PostgreSQL database, one gunicorn worker
with one thread); jobs are seeded with SQL (every kind of the registry, every status,
finished ones with run times from 1 s to 6 h, waiting ones on two queues), plus GPU
leases and verdicts; then R scrapes with the bearer token are timed at each size. The
anchor, in the same run: a bare ``SELECT count(*) FROM jobs_job`` over psycopg, the
least a per-scrape count of the table can cost.

    .venv/bin/python bench/metrics.py --sizes 10000,100000,1000000 --runs 30
"""

from __future__ import annotations

import argparse
import http.client
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import BenchStack

TOKEN = "bench-metrics-token"  # noqa: S105  (a throw-away stack of this run)
STATUSES = ["pending", "queued", "running", "succeeded", "failed", "errored", "canceled"]


def seed(stack: BenchStack, start: int, stop: int, kinds: list[str]) -> None:
    """Jobs start+1 .. stop, written by PostgreSQL itself (generate_series)."""
    kind_array = "ARRAY[" + ",".join(f"'{k}'" for k in kinds) + "]"
    status_array = "ARRAY[" + ",".join(f"'{s}'" for s in STATUSES) + "]"
    sql = f"""
    INSERT INTO jobs_job (kind, params, requested_hardware, executor, image, image_digest,
        status, launch_type, timeout_s, created_at, started_at, finished_at, heartbeat_at,
        progress, progress_message, error, attempt, worker, task_id, summary, team_id)
    SELECT k, '{{}}', CASE WHEN g % 3 = 0 THEN '{{"queue": "gpu-b"}}'::jsonb ELSE '{{}}' END,
        'local', '', '', s, 'api', 3600, now() - interval '1 day',
        CASE WHEN s IN ('pending', 'queued') THEN NULL ELSE now() - interval '1 day' END,
        CASE WHEN s IN ('succeeded', 'failed', 'errored', 'canceled')
             THEN now() - interval '1 day' + make_interval(secs => 1 + (g::bigint * 7919) % 21600)
             END,
        CASE WHEN s = 'running' THEN now() ELSE NULL END,
        0, '', '', 0, CASE WHEN s = 'running' THEN 'w' || (g % 8) || '@host' ELSE '' END,
        '', '{{}}', (SELECT id FROM portal_team LIMIT 1)
    FROM (SELECT g, ({kind_array})[1 + g % {len(kinds)}] AS k,
                 ({status_array})[1 + (g / 3) % 7] AS s
          FROM generate_series({start + 1}, {stop}) AS g) AS rows;
    """  # noqa: S608  (the registry's kind names and integers, no input)
    subprocess.run(
        ["psql", f"{stack.pg}/{stack.dbname}", "-qc", sql, "-c", "ANALYZE jobs_job"], check=True
    )


def scrape(port: int) -> tuple[float, int]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    started = time.perf_counter()
    connection.request("GET", "/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    answer = connection.getresponse()
    body = answer.read()
    took = time.perf_counter() - started
    assert answer.status == 200, body[:300]
    connection.close()
    return took, len(body)


def count_anchor(stack: BenchStack) -> float:
    import psycopg

    with psycopg.connect(f"{stack.pg}/{stack.dbname}") as connection:
        started = time.perf_counter()
        connection.execute("SELECT count(*) FROM jobs_job").fetchone()
        return time.perf_counter() - started


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    env = {"ROCPATH_METRICS_TOKEN": TOKEN, "ROCPATH_JOB_QUEUES": "gpu-b"}
    with BenchStack(concurrency=1, web_workers=1, web_threads=1, extra_env=env) as stack:
        from stack.kinds import KINDS

        kinds = sorted(KINDS)
        done = 0
        print("| jobs | scrape p50 | scrape p95 | body | anchor count(*) p50 |")
        print("| ---: | ---: | ---: | ---: | ---: |")
        for size in sizes:
            seed(stack, done, size, kinds)
            done = size
            scrape(stack.port)  # warm the worker's connection and caches
            rows = [scrape(stack.port) for _ in range(args.runs)]
            times = [took for took, _ in rows]
            anchor = statistics.median(count_anchor(stack) for _ in range(args.runs))
            print(
                f"| {size:,} | {statistics.median(times) * 1000:.1f} ms "
                f"| {pct(times, 0.95) * 1000:.1f} ms | {rows[-1][1]:,} B "
                f"| {anchor * 1000:.1f} ms |",
                flush=True,
            )


if __name__ == "__main__":
    main()
