"""Soak: N jobs over REST to real workers while Redis, PostgreSQL and the worker fail.

A private PostgreSQL cluster and a private Redis (AOF, as containers/compose.yaml runs
it; tests/faults/servers.py) carry a BenchStack with a job worker, a control worker and
beat. Jobs are submitted at a steady rate; faults come at times drawn from a seeded RNG,
each at least FAULT_GAP_S after the one before it is over:
Redis SIGTERM or SIGKILL then started again, PostgreSQL `stop -m fast` / `-m immediate`
then started, the worker's main process SIGKILLed and started again a second later (as
make run or compose would); and issue 29's: a 45-s PostgreSQL outage with a job of 8 s
running on every slot (pg-long), a pool child SIGKILLed while it runs a job (child-sigkill),
the control worker SIGKILLed and started again (control-sigkill), a Redis that loses a
backlog (redis-backlog: every slot busy with a job of 20 s, the queue left to grow to 20
messages or more, then Redis SIGKILLed and its AOF removed, as a Redis without
persistence or with a lost volume would come back), and two hostile jobs: one writing
400 MiB into out/ under a cap of OUT_CAP_MB (out-flood), one allocating 4 x 300 MiB
under a memory cap of MEMORY_CAP_MB (memory-hog). At the end it reports:

  lost        submitted (an id came back) but never run: row missing, or reaped while
              pending/queued
  run_twice   more runners started than the job had attempts
  stuck       not ended (grace + one interval) after the last fault and submission
  5xx         answers >= 500 to requests sent while the service was down (or answered
              before it was back), and to requests sent once it was back
  recovery    per fault: from the service back to the next job claimed / finished
  errored_should_have_retried
              errored jobs but those a fault ended on purpose ("worker lost": their
              worker or pool child was killed; by design not run again)
  pool_child_kills
              per kill, seconds until its job was ended (goal <= 5)
  redis_backlog_resent
              per Redis restart, the jobs sent again because the broker no longer held
              their message (LOST_BY_BROKER; not those a killed worker held): how many of
              the backlog, and the first and last seconds after Redis answered (goal <= 10)
  out_flood   per out-flood job: what its out folder held once it was killed, against
              the cap (goal <= cap + 64 MiB), and its error
  memory_hog  per memory-hog job: the most its processes held together (the kernel's
              count, from the job's log), against the cap (goal <= cap), and its error

"Back" is the first instant this script itself reaches the service again: a new
PostgreSQL connection that runs `SELECT 1`, or a Redis `PING`, tried every 20 ms from
the moment the server was started again. The start command returning is not it
(`pg_ctl -w` polls, so it returns later than the server answers; runuser adds more).

    .venv/bin/python bench/soak.py --jobs 2000 --seed 11

Goal (issue 11): 0 lost, 0 run twice, 0 stuck, no 5xx once the database is back,
recovery <= 10 s after the broker or database is back. Issue 29 adds: 0 errored that
should have retried, a killed pool child's job ended <= 5 s after the kill, a Redis
backlog resent <= 10 s after Redis is back, out-folder overshoot <= cap + 64 MiB, one
job's total memory <= its cap.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import shutil
import signal
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import psutil
import psycopg
from harness import ROOT, BenchStack
from redis import Redis, RedisError

from tests.faults.servers import PostgresCluster, RedisServer, free_port

FAULTS = [
    "redis-sigterm",
    "redis-sigkill",
    "pg-fast",
    "pg-immediate",
    "worker-sigkill",
    # issue 29's: a 45-s PostgreSQL outage with every slot running a job, a pool child
    # SIGKILLed mid-job, the control worker SIGKILLed (started again after the pause)
    "pg-long",
    "child-sigkill",
    "control-sigkill",
    "redis-backlog",
    "out-flood",
    "memory-hog",
]
PG_LONG_S = 45
# Each fault waits this long after the one before it is over: stacked faults (a Redis
# restart 3 s after a 45-s outage) made one's recovery look like another's.
FAULT_GAP_S = 20
BACKLOG = 20  # messages queued in Redis before redis-backlog kills it
OUT_CAP_MB, MEMORY_CAP_MB = 64, 512  # the stack's ROCPATH_OUT_MAX_BYTES, _LOCAL_MEMORY_MB
OUT_FLOOD = {"kind": "noop", "params": {"write_bytes": 400 * 1024**2}}
MEMORY_HOG = {
    "kind": "sandbox-check",
    "params": {"action": "allocate-memory", "megabytes": 300, "processes": 4},
}
OUT_OVER = "the job was stopped: its out folder went over its cap"
OUT_OF_MEMORY = "out of memory: the job went over its"
GRACE_S, INTERVAL_S = 30, 5  # running grace and reaper / dispatcher interval of the stack
REDISPATCH_S = 120  # ROCPATH_REDISPATCH_AFTER_S's default: a lost message is sent again then
# How long the jobs may take to end after the last submission: the running grace, the
# redispatch wait and the longest retry pause (60 s), each plus one interval.
DRAIN_S = GRACE_S + REDISPATCH_S + 60 + 3 * INTERVAL_S
CHILD_LOST = "worker lost: the process running the job"
LOST_PREFIXES = ("no worker", "the broker lost", "workers consume", "the job queue could not")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=6.0, help="submissions per second")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--faults", type=int, default=10, help="each kind in turn, shuffled")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument(
        "--kinds", default=",".join(FAULTS), help=f"faults to inject, of {','.join(FAULTS)}"
    )
    parser.add_argument("--log-level", default="WARNING", help="of the stack's processes")
    parser.add_argument("--keep-logs", type=Path, help="copy the stack's var/log/ here at the end")
    args = parser.parse_args()
    unknown = set(args.kinds.split(",")) - set(FAULTS)
    if unknown:
        parser.error(f"--kinds: unknown fault {', '.join(sorted(unknown))}")
    rng = random.Random(args.seed)

    pg = PostgresCluster()
    pg.create()
    redis_dir = Path(pg.folder.parent, f"{pg.folder.name}-redis")
    redis_dir.mkdir()
    redis = RedisServer(port=free_port(), folder=redis_dir, appendonly=True)
    redis.start()
    env = {
        "ROCPATH_RUNNING_GRACE_S": str(GRACE_S),
        "ROCPATH_REAPER_INTERVAL_S": str(INTERVAL_S),
        "ROCPATH_DISPATCH_INTERVAL_S": str(INTERVAL_S),
        "ROCPATH_QUEUED_GRACE_S": "600",
        "ROCPATH_REDISPATCH_AFTER_S": str(REDISPATCH_S),
        "ROCPATH_HEARTBEAT_S": "2",
        "ROCPATH_OUT_MAX_BYTES": str(OUT_CAP_MB * 1024**2),
        "ROCPATH_LOCAL_MEMORY_MB": str(MEMORY_CAP_MB),
        "LOG_LEVEL": args.log_level,
    }
    try:
        with BenchStack(
            concurrency=args.concurrency,
            pg=pg.url().rsplit("/", 1)[0],
            redis=redis.url,
            extra_env=env,
            control=True,
        ) as stack:
            report = soak(stack, pg, redis, rng, args)
            if args.keep_logs:
                shutil.copytree(stack.var / "log", args.keep_logs, dirs_exist_ok=True)
    finally:
        redis.stop(signal.SIGKILL)
        pg.destroy()
        shutil.rmtree(redis_dir, ignore_errors=True)
    print(json.dumps(report, indent=2))


def soak(stack: BenchStack, pg: PostgresCluster, redis: RedisServer, rng, args) -> dict:
    from django.db import OperationalError, close_old_connections

    from jobs.models import Job, JobEvent
    from jobs.services.dispatch import LOST_BY_BROKER, LOST_BY_WORKER, RESENT

    span = args.jobs / args.rate
    chosen = [k for k in FAULTS if k in args.kinds.split(",")]
    kinds = [chosen[i % len(chosen)] for i in range(args.faults)]
    rng.shuffle(kinds)
    times = sorted(rng.uniform(0.05 * span, 0.9 * span) for _ in kinds)
    schedule = [(t, k, rng.uniform(1, 5)) for t, k in zip(times, kinds, strict=True)]
    outages: list[dict] = []  # kind, down, started (command returned), back (epoch seconds)
    answers: list[tuple[float, float, int, str]] = []  # sent, answered, status, body head
    ids: list[int] = []
    hostile: dict[str, list[int]] = {"out-flood": [], "memory-hog": []}
    lock = threading.Lock()
    started = time.time()

    def fill_slots(seconds: float = 8) -> None:
        """Jobs of ``seconds`` on every slot, running, before the database or broker goes."""
        for _ in range(args.concurrency):
            status, payload = stack.request("POST", "/api/v1/jobs/", {
                "kind": "noop", "params": {"seconds": seconds, "steps": 4}})  # fmt: skip
            if status in (201, 202):
                with lock:
                    ids.append(payload["id"])
        until = time.time() + 15
        while time.time() < until:
            close_old_connections()
            with contextlib.suppress(OperationalError):
                if Job.objects.filter(status="running").count() >= args.concurrency:
                    return
            time.sleep(0.2)

    def running_child() -> psutil.Process | None:
        """A pool child of the worker that is running a job: its zygote has a child."""
        until = time.time() + 10
        while time.time() < until:
            with contextlib.suppress(psutil.Error):
                for child in psutil.Process(stack.procs["worker"].pid).children():
                    if any(z.children() for z in child.children()):
                        return child
            time.sleep(0.05)
        return None

    def queued_in_redis() -> int:
        with contextlib.suppress(RedisError):
            return int(Redis.from_url(redis.url, socket_timeout=1).llen(stack.queue))
        return 0

    def inject() -> None:
        free_at = 0.0  # the last fault's service back, plus FAULT_GAP_S
        for at, kind, down_s in schedule:
            time.sleep(max(0.0, started + at - time.time(), free_at - time.time()))
            if kind == "pg-long":
                fill_slots()
            backlog = None
            if kind == "redis-backlog":
                fill_slots(20)
                until = time.time() + 15  # the submissions go on meanwhile, at --rate
                while queued_in_redis() < BACKLOG and time.time() < until:
                    time.sleep(0.1)
                backlog = queued_in_redis()
            down = time.time()
            if kind in hostile:
                status, payload = stack.request(
                    "POST", "/api/v1/jobs/", OUT_FLOOD if kind == "out-flood" else MEMORY_HOG
                )
                if status in (201, 202):
                    with lock:
                        hostile[kind].append(payload["id"])
                        ids.append(payload["id"])
                probe = None
            elif kind == "redis-backlog":
                redis.stop(signal.SIGKILL)
                for left in redis.folder.glob("appendonly*"):  # what it had kept: gone
                    shutil.rmtree(left) if left.is_dir() else left.unlink()
                time.sleep(down_s)
                probe = threading.Thread(target=first_answer, args=(redis_answers, found))
                probe.start()
                redis.start()
            elif kind == "child-sigkill":
                child = running_child()
                if child is not None:
                    with contextlib.suppress(psutil.Error):
                        child.kill()
                    down = time.time()
                    child_kills.append(down)
                probe = None
            elif kind == "control-sigkill":
                stack.kill("control")
                time.sleep(down_s)
                probe = None
                stack.spawn("control")
            elif kind.startswith("redis"):
                redis.stop(signal.SIGTERM if kind == "redis-sigterm" else signal.SIGKILL)
                time.sleep(down_s)
                probe = threading.Thread(target=first_answer, args=(redis_answers, found))
                probe.start()
                redis.start()
            elif kind.startswith("pg"):
                pg.stop("fast" if kind == "pg-long" else kind.removeprefix("pg-"))
                time.sleep(PG_LONG_S if kind == "pg-long" else down_s)
                probe = threading.Thread(target=first_answer, args=(pg_answers, found))
                probe.start()
                pg.start()
            else:
                stack.kill("worker")
                time.sleep(1)  # the supervisor's first pause
                probe = None
                stack.spawn("worker")
            restarted = time.time()
            if probe is not None:
                probe.join()
            back = found.pop() if probe is not None else restarted
            outages.append({"kind": kind, "down": down, "started": restarted, "back": back,
                            "backlog": backlog})  # fmt: skip
            free_at = back + FAULT_GAP_S

    found: list[float] = []
    child_kills: list[float] = []

    def first_answer(answers_now, into: list[float]) -> None:
        while not answers_now():
            time.sleep(0.02)
        into.append(time.time())

    def pg_answers() -> bool:
        try:
            with psycopg.connect(pg.url(), connect_timeout=1) as conn:
                conn.execute("SELECT 1")
            return True
        except psycopg.Error:
            return False

    def redis_answers() -> bool:
        try:
            return bool(Redis.from_url(redis.url, socket_timeout=1).ping())
        except RedisError:
            return False

    def submit(i: int) -> None:
        time.sleep(max(0.0, started + i / args.rate - time.time()))
        body = {"kind": "noop", "params": {"seconds": round(rng.uniform(0, 0.5), 2), "steps": 3}}
        while True:  # a client retries what the server could not take, with a pause
            sent = time.time()
            try:
                status, payload = stack.request("POST", "/api/v1/jobs/", body)
            except OSError:
                status, payload = 599, None  # no answer at all (gunicorn restarting a worker)
            head = "" if status < 500 else json.dumps(payload)[:200]
            with lock:
                answers.append((sent, time.time(), status, head))
            if status in (201, 202):
                with lock:
                    ids.append(payload["id"])
                return
            time.sleep(1)

    faults = threading.Thread(target=inject)
    faults.start()
    with ThreadPoolExecutor(args.clients) as pool:
        list(pool.map(submit, range(args.jobs)))
    faults.join()
    submitted_s = time.time() - started

    live = ["pending", "queued", "running"]
    deadline = time.time() + DRAIN_S
    while time.time() < deadline:
        close_old_connections()
        with contextlib.suppress(OperationalError):  # the database may be coming back
            if not Job.objects.filter(pk__in=ids, status__in=live).exists():
                break
        time.sleep(1)
    drained_s = time.time() - started

    rows = {r["id"]: r for r in Job.objects.filter(pk__in=ids).values()}
    runners: dict[int, int] = {}
    for job_id in JobEvent.objects.filter(
        job_id__in=ids, message__startswith="runner started"
    ).values_list("job_id", flat=True):
        runners[job_id] = runners.get(job_id, 0) + 1
    lost = [i for i in ids if i not in rows] + [
        i
        for i, r in rows.items()
        if r["status"] == "errored" and r["error"].startswith(LOST_PREFIXES)
    ]
    run_twice = [i for i, r in rows.items() if runners.get(i, 0) > max(r["attempt"], 1)]
    stuck = [i for i, r in rows.items() if r["status"] in live]
    by_status: dict[str, int] = {}
    for r in rows.values():
        by_status[r["status"]] = by_status.get(r["status"], 0) + 1
    errors: dict[str, int] = {}
    for r in rows.values():
        if r["status"] == "errored":
            key = r["error"][:70]
            errors[key] = errors.get(key, 0) + 1

    def while_down(sent: float, answered: float) -> bool:
        """Sent while a service was down, or answered before it was back."""
        return any(o["down"] <= answered and sent < o["back"] for o in outages)

    def after(sent: float) -> str | None:
        """The fault a request sent once its service was back came after, within 10 s."""
        return next(
            (f"{o['kind']} +{sent - o['back']:.2f}s" for o in outages
             if o["back"] <= sent <= o["back"] + 10),
            None,
        )  # fmt: skip

    errors_5xx = [(s, a, c, h) for s, a, c, h in answers if c >= 500]
    down_5xx = [e for e in errors_5xx if while_down(e[0], e[1])]
    back_5xx = [e for e in errors_5xx if not while_down(e[0], e[1])]

    # Messages a killed worker held, sent again by the dispatcher: seconds from the kill.
    kills = [o["down"] for o in outages if o["kind"] == "worker-sigkill"]
    resent_after_kill = []
    for job_id, at in JobEvent.objects.filter(
        job_id__in=ids, message__contains=LOST_BY_WORKER[:40]
    ).values_list("job_id", "created_at"):
        kill = max((k for k in kills if k <= at.timestamp()), default=None)
        claimed = rows[job_id]["started_at"]
        resent_after_kill.append(
            {
                "job": job_id,
                "resent_s": None if kill is None else round(at.timestamp() - kill, 2),
                "claimed_s": None
                if kill is None or claimed is None
                else round(claimed.timestamp() - kill, 2),
            }
        )

    # A pool child killed mid-job: its job ended by the worker's main process, seconds after.
    child_lost = sorted(
        r["finished_at"].timestamp()
        for r in rows.values()
        if r["status"] == "errored" and r["error"].startswith(CHILD_LOST) and r["finished_at"]
    )
    child_kill_ended = [
        {"at_s": round(k - started, 1),
         "job_ended_s": next((round(t - k, 2) for t in child_lost if t >= k), None)}
        for k in child_kills
    ]  # fmt: skip
    # After each Redis restart: the messages the broker lost, sent again (seconds from back).
    resends = sorted(
        at.timestamp()
        for at in JobEvent.objects.filter(
            job_id__in=ids, message__startswith=RESENT, message__contains=LOST_BY_BROKER[:40]
        ).values_list("created_at", flat=True)
    )  # fmt: skip
    redis_backlog = []
    restarts = [o for o in outages if o["kind"].startswith("redis")]
    for o, then in zip(restarts, [*restarts[1:], None], strict=True):
        until = o["back"] + 120 if then is None else min(o["back"] + 120, then["down"])
        after_back = [t - o["back"] for t in resends if o["back"] <= t <= until]
        redis_backlog.append({
            "kind": o["kind"], "at_s": round(o["down"] - started, 1),
            "queued_in_redis": o["backlog"], "resent": len(after_back),
            "first_resent_s": round(min(after_back), 2) if after_back else None,
            "last_resent_s": round(max(after_back), 2) if after_back else None,
        })  # fmt: skip
    # Every job here is a noop that succeeds unless a fault ended it on purpose ("worker
    # lost": its worker or pool child was killed, and it is not run again by design).
    on_purpose = (CHILD_LOST, "worker lost: bench")  # "... <worker> restarted while ..."
    hostile_ids = {i for found in hostile.values() for i in found}
    should_have_retried = [
        i for i, r in rows.items()
        if r["status"] == "errored" and i not in hostile_ids and not (
            r["error"].startswith(on_purpose) and ("restarted" in r["error"]
                                                   or r["error"].startswith(CHILD_LOST)))
    ]  # fmt: skip
    # The hostile jobs: stopped by their caps, with what they held then.
    out_flood = []
    for i in hostile["out-flood"]:
        error = (rows.get(i) or {}).get("error", "")
        held = error.rsplit("; ", 1)[-1].split()[0] if "by the time it was killed" in error else ""
        out_flood.append({
            "job": i, "status": (rows.get(i) or {}).get("status"),
            "held_mib": round(int(held) / 1024**2, 1) if held.isdigit() else None,
            "cap_mib": OUT_CAP_MB, "error": error[:300],
        })  # fmt: skip
    memory_hog = []
    for i in hostile["memory-hog"]:
        logged = JobEvent.objects.filter(
            job_id=i, message__startswith="memory: its processes held at most"
        ).values_list("message", flat=True)
        peak = next(iter(logged), "").removeprefix("memory: its processes held at most ")
        memory_hog.append({
            "job": i, "status": (rows.get(i) or {}).get("status"),
            "peak_mib": int(peak.split()[0]) if peak[:1].isdigit() else None,
            "cap_mib": MEMORY_CAP_MB, "error": (rows.get(i) or {}).get("error", "")[:300],
        })  # fmt: skip

    recovery = []
    claims = sorted(r["started_at"].timestamp() for r in rows.values() if r["started_at"])
    ends = sorted(r["finished_at"].timestamp() for r in rows.values() if r["finished_at"])
    for o in outages:
        claim = next((t for t in claims if t >= o["back"]), None)
        end = next((t for t in ends if t >= o["back"]), None)
        recovery.append(
            {
                "kind": o["kind"],
                "at_s": round(o["down"] - started, 1),
                "down_s": round(o["back"] - o["down"], 2),
                "start_command_s": round(o["started"] - o["back"], 2),
                "to_next_claim_s": None if claim is None else round(claim - o["back"], 2),
                "to_next_finish_s": None if end is None else round(end - o["back"], 2),
            }
        )
    from config.broker import task_ids_in_broker

    held: set[str] = set()
    with contextlib.suppress(Exception):  # only to explain what is stuck
        held = task_ids_in_broker({stack.queue}) or set()
    stuck_detail = [
        {
            "id": i,
            "status": rows[i]["status"],
            "task_in_broker": rows[i]["task_id"] in held,
            "events": list(JobEvent.objects.filter(job_id=i).values_list("message", flat=True)[:6]),
        }
        for i in stuck[:5]
    ]
    return {
        "command": " ".join(["bench/soak.py", *sys.argv[1:]]),
        "jobs": args.jobs,
        "accepted": len(ids),
        "seed": args.seed,
        "rate_per_s": args.rate,
        "worker_concurrency": args.concurrency,
        "submitted_s": round(submitted_s, 1),
        "drained_s": round(drained_s, 1),
        "statuses": by_status,
        "errored_by_cause": errors,
        "lost": len(lost),
        "run_twice": len(run_twice),
        "stuck": len(stuck),
        "stuck_detail": stuck_detail,
        "errored_should_have_retried": len(should_have_retried),
        "errored_should_have_retried_detail": [
            {
                "id": i,
                "error": rows[i]["error"][:400],
                "events": [
                    f"{at:%H:%M:%S.%f} {message[:200]}"
                    for at, message in JobEvent.objects.filter(job_id=i)
                    .order_by("id")
                    .values_list("created_at", "message")[:12]
                ],
            }
            for i in should_have_retried[:4]
        ],
        "pool_child_kills": child_kill_ended,
        "redis_backlog_resent": redis_backlog,
        "out_flood": out_flood,
        "memory_hog": memory_hog,
        "rerun_after_fault": sum(1 for r in rows.values() if r["attempt"] > 1),
        "requests": len(answers),
        "http_5xx_while_down": len(down_5xx),
        "http_5xx_while_down_by_kind": {
            k: sum(
                1
                for s, a, _, _ in down_5xx
                if any(o["kind"] == k and o["down"] <= a and s < o["back"] for o in outages)
            )
            for k in chosen
        },
        "http_5xx_after_back": len(back_5xx),
        "http_5xx_after_back_detail": [
            {"after": after(s), "took_s": round(a - s, 2), "status": c, "body": h}
            for s, a, c, h in back_5xx[:10]
        ],
        "http_202_pending": sum(1 for _, _, c, _ in answers if c == 202),
        "recovery": recovery,
        "resent_after_worker_kill": resent_after_kill,
        "max_recovery_to_claim_s": max(
            (r["to_next_claim_s"] for r in recovery if r["to_next_claim_s"] is not None),
            default=None,
        ),
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "root": str(ROOT),
    }


if __name__ == "__main__":
    main()
