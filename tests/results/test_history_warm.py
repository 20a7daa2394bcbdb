"""A finished job's comparison warms the histories it extended: the history page's first
view of those series finds its change points and segments cached (issue 39: the first view
of a 1,000-run series waited ~100 ms for PELT and ~40 ms for the segments' intervals)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from django.utils.datastructures import MultiValueDict

from jobs.choices import JobStatus
from results import compare, detect, services, tasks
from results.compare import HistoryQuery, history, warm_histories
from tests.factories import make_environment, make_job, make_sampled_measurement

pytestmark = pytest.mark.django_db

NOISE = [0.2, -0.1, 0.15, -0.2, 0.05, 0.1, -0.15, 0.0, 0.1, -0.05]


def _series(team, env, values, m=4096):
    start = timezone.now() - timedelta(days=10)
    jobs = []
    for i, v in enumerate(values):
        job = make_job(
            team, status=JobStatus.SUCCEEDED, environment=env, created_at=start + timedelta(hours=i)
        )
        make_sampled_measurement(job, v, [v], m=m, precision="fp16")
        make_sampled_measurement(job, v / 2, [v / 2], m=m // 2, precision="fp16")
        jobs.append(job)
    return jobs


def _query(env, m=4096) -> HistoryQuery:
    params = {
        "benchmark": "gemm",
        "metric": "throughput",
        "case": f'{{"precision": "fp16", "m": {m}}}',
        "fingerprint": env.fingerprint,
    }
    return HistoryQuery.parse(MultiValueDict({k: [v] for k, v in params.items()}))


def test_a_warmed_history_is_served_without_computing_its_change_points(team, user, monkeypatch):
    compare.results_cache().clear()
    env = make_environment()
    jobs = _series(team, env, [100 + n for n in NOISE * 3] + [90 + n for n in NOISE * 3])

    assert warm_histories(jobs[-1].pk) == 2  # both of the job's cases
    monkeypatch.setattr(detect, "change_points", lambda values: pytest.fail("computed again"))
    for m in (4096, 2048):
        result = history(user, _query(env, m))
        assert len(result.points) == 60 and result.change_points == [30]
        assert result.segments[1].ratio.value == pytest.approx(0.9, abs=0.005)


def test_warming_stops_at_its_bound_of_cases(team, monkeypatch):
    compare.results_cache().clear()
    env = make_environment()
    jobs = _series(team, env, [100 + n for n in NOISE])
    computed: list[int] = []
    real = detect.change_points
    monkeypatch.setattr(detect, "change_points", lambda v: computed.append(len(v)) or real(v))

    assert warm_histories(jobs[-1].pk, most=1) == 1
    assert computed == [10]


def test_the_comparison_task_warms_the_jobs_histories(team, monkeypatch):
    env = make_environment()
    jobs = _series(team, env, [100 + n for n in NOISE])
    warmed: list[int] = []
    monkeypatch.setattr(services, "compare_job", lambda job_id: [])
    monkeypatch.setattr(compare, "warm_histories", lambda job_id: warmed.append(job_id) or 0)

    assert tasks.compare_job(jobs[-1].pk) == 0
    assert warmed == [jobs[-1].pk]
