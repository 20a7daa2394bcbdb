"""Jobs with sampled measurements in one environment: what baselines compare."""

from __future__ import annotations

from typing import Any

import numpy as np

from jobs.choices import JobStatus
from jobs.models import Environment, Job, Measurement
from jobs.services import record_environment
from tests.factories import make_job


def environment(host: str = "box-1") -> Environment:
    return record_environment({"host": {"hostname": host}})


def sampled_job(
    team: Any,
    project: Any,
    env: Environment | None,
    *,
    level: float = 100.0,
    sizes: tuple[int, ...] = (512, 1024),
    seed: int = 0,
    status: str = JobStatus.SUCCEEDED,
    n: int = 30,
) -> Job:
    """A succeeded blas-like job: a throughput per size, 30 log-normal samples each."""
    job = make_job(team, status=status, project=project, environment=env)
    rng = np.random.default_rng(seed)
    for size in sizes:
        samples = [float(x) for x in level * rng.lognormal(0.0, 0.01, n)]
        Measurement.objects.create(
            job=job,
            environment=env,
            benchmark="gemm",
            case={"m": size, "n": size, "k": size, "precision": "fp32"},
            metric="throughput",
            unit="TFLOP/s",
            value=float(np.median(samples)),
            samples=samples,
            better="higher",
        )
    return job
