"""Container overhead: a trivial job through rocpath's docker executor vs a bare `docker run`.

In one run, interleaved, N times each: (a) `docker run --rm --network none` of the job
image running the same noop command with the same mounts, timed start to exit from
the client; (b) a noop job submitted through REST → Celery → docker executor →
ingested, timed from submit to "container started" and to finished. The ratio of
the medians of (b) end-to-end over (a) is the figure.

    .venv/bin/python bench/containers.py --runs 20

Goal (issue 3): at most 1.2x.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import BenchStack


def bare_run(image: str) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        params = Path(tmp) / "params.json"
        params.write_text("{}")
        out = Path(tmp) / "out"
        out.mkdir()
        out.chmod(0o777)
        started = time.perf_counter()
        subprocess.run(
            [
                "docker",
                "run",
                "--rm",
                "--network",
                "none",
                "--read-only",
                "--tmpfs",
                "/tmp",  # noqa: S108 - inside the container
                "--user",
                "10001:10001",
                "-v",
                f"{params}:/job/params.json:ro",
                "-v",
                f"{out}:/job/out",
                image,
                "run",
                "noop",
                "--params",
                "/job/params.json",
                "--out",
                "/job/out",
            ],
            check=True,
            capture_output=True,
        )
        return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--image", default="rocpath/debian:latest")
    args = parser.parse_args()

    with BenchStack(
        executor="docker", concurrency=1, extra_env={"ROCPATH_IMAGE": args.image}
    ) as stack:
        from jobs.choices import TERMINAL_STATUSES
        from jobs.models import Job, JobEvent

        bare_run(args.image)  # warm the engine and the page cache alike
        bare, to_started, end_to_end, statuses = [], [], [], []
        for _ in range(args.runs):
            bare.append(bare_run(args.image))
            job_id, sent = stack.submit({"kind": "noop"})
            while True:
                job = Job.objects.get(pk=job_id)
                if job.status in TERMINAL_STATUSES:
                    break
                time.sleep(0.005)
            statuses.append(job.status)
            started = JobEvent.objects.get(job=job, message__startswith="container ").created_at
            to_started.append(started.timestamp() - sent)
            end_to_end.append(job.finished_at.timestamp() - sent)

    med = statistics.median
    report = {
        "runs": args.runs,
        "image": args.image,
        "statuses": sorted(set(statuses)),
        "bare_docker_run_ms_p50": round(med(bare) * 1000, 1),
        "rocpath_submit_to_container_started_ms_p50": round(med(to_started) * 1000, 1),
        "rocpath_end_to_end_ms_p50": round(med(end_to_end) * 1000, 1),
        "ratio_end_to_end_vs_bare": round(med(end_to_end) / med(bare), 3),
        "bare_ms_all": [round(x * 1000) for x in bare],
        "rocpath_ms_all": [round(x * 1000) for x in end_to_end],
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
