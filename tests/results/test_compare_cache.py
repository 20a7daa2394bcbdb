"""Comparisons at real size: a 4,000-case comparison is warm on its second request, on the
embedded defaults' file cache and on Redis (CACHE_URL), and the batched intervals are
ratio_interval's, number for number (issue 39, item 3)."""

from __future__ import annotations

import random
import uuid
from typing import Any

import pytest
from django.conf import settings
from django.core.cache import caches

from jobs.choices import JobStatus
from jobs.models import Measurement
from results import compare as compare_module
from results.compare import _intervals
from results.stats import ratio_interval
from tests.factories import make_environment, make_job

pytestmark = pytest.mark.django_db

CASES = 4000


def _four_thousand_cases(team: Any) -> tuple[int, int]:
    """Two jobs of 4,000 GEMM cases each (8 samples a side), written in bulk."""
    env = make_environment()
    jobs = [make_job(team, status=JobStatus.SUCCEEDED, environment=env) for _ in range(2)]
    rng = random.Random(39)
    rows = []
    for job, level in zip(jobs, (1.0, 1.05), strict=True):
        for i in range(CASES):
            samples = [round(level * (100 + i) * rng.gauss(1, 0.02), 4) for _ in range(8)]
            rows.append(
                Measurement(
                    job=job,
                    environment=env,
                    benchmark="gemm",
                    case={"m": i, "precision": "fp16"},
                    metric="throughput",
                    unit="TFLOP/s",
                    value=sorted(samples)[4],
                    samples=samples,
                    better="higher",
                )
            )
    Measurement.objects.bulk_create(rows, batch_size=1000)
    return jobs[0].pk, jobs[1].pk


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many intervals each computation made (the batched path and the single one)."""
    made: list[int] = []
    batched, single = compare_module._intervals, compare_module.ratio_interval

    def count_batch(pairs: list, seed: int) -> list:
        made.append(len(pairs))
        return batched(pairs, seed)

    def count_single(*args: Any, **kwargs: Any) -> Any:
        made.append(1)
        return single(*args, **kwargs)

    monkeypatch.setattr(compare_module, "_intervals", count_batch)
    monkeypatch.setattr(compare_module, "ratio_interval", count_single)
    return made


def _embedded(tmp_path: Any) -> dict:
    """CACHES["results"] as the embedded defaults make it (config/settings/base.py)."""
    return {
        "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
        "LOCATION": str(tmp_path / "results"),
        "TIMEOUT": 7 * 24 * 3600,
        "OPTIONS": {"MAX_ENTRIES": settings.ROCPATH_RESULTS_CACHE_ENTRIES},
    }


def _redis() -> dict:
    """CACHES["results"] as CACHE_URL=redis://… makes it, under a prefix of this test's own."""
    return {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": "redis://127.0.0.1:6379/14",
        "KEY_PREFIX": f"results-test-{uuid.uuid4().hex[:8]}",
        "TIMEOUT": 7 * 24 * 3600,
    }


@pytest.mark.parametrize("backend", ["embedded file cache", "redis"])
def test_a_4000_case_comparison_is_warm_on_the_second_request(
    team: Any, member_client: Any, counted: list[int], tmp_path: Any, backend: str, settings: Any
) -> None:
    a, b = _four_thousand_cases(team)
    # Django's setting_changed rebuilds the cache aliases from this (and back after the test).
    settings.CACHES = {
        **settings.CACHES,
        "results": _embedded(tmp_path) if backend != "redis" else _redis(),
    }
    try:
        first = member_client.get(f"/api/v1/compare/?jobs={a},{b}")
        assert first.status_code == 200
        assert sum(counted) == CASES  # the first view computes every interval once
        counted.clear()
        second = member_client.get(f"/api/v1/compare/?jobs={a},{b}")
        assert second.status_code == 200
        assert counted == []  # warm: no interval computed
        assert second.json()["rows"] == first.json()["rows"]
        assert len(second.json()["rows"]) == CASES
    finally:
        caches["results"].clear()


def test_a_column_is_one_cache_entry_shared_by_comparisons_of_the_same_pair(
    team: Any, user: Any, counted: list[int]
) -> None:
    """One entry per job pair: a comparison of three jobs reuses the pair compared before."""
    env = make_environment()
    jobs = [make_job(team, status=JobStatus.SUCCEEDED, environment=env) for _ in range(3)]
    for k, job in enumerate(jobs):
        for m in range(20):
            Measurement.objects.create(
                job=job, environment=env, benchmark="gemm", case={"m": m}, metric="throughput",
                unit="TFLOP/s", value=10.0 + k, samples=[9.9 + k, 10.0 + k, 10.1 + k],
                better="higher",
            )  # fmt: skip
    caches["results"].clear()
    from django.utils.datastructures import MultiValueDict

    def run(ids: list[int]) -> None:
        query = compare_module.CompareQuery.parse(
            MultiValueDict({"jobs": [",".join(map(str, ids))]})
        )
        compare_module.compare(user, query)

    run([jobs[0].pk, jobs[1].pk])
    assert counted == [20]
    counted.clear()
    run([jobs[0].pk, jobs[1].pk, jobs[2].pk])
    assert counted == [20]  # only the new column (job 3 against the baseline)


def test_batched_intervals_equal_ratio_interval_number_for_number() -> None:
    rng = random.Random(7)
    pairs = []
    for _ in range(60):
        na, nb = rng.choice([2, 3, 5, 8, 10, 11]), rng.choice([2, 4, 5, 10, 13])
        level = rng.uniform(0.5, 500)
        pairs.append(
            (
                [level * rng.lognormvariate(0, 0.05) for _ in range(na)],
                [level * rng.lognormvariate(0.03, 0.2) for _ in range(nb)],
            )
        )
    # ratio_interval's special cases: one sample, none, a zero median, zeros resampled
    pairs += [([5.0], [4.0, 4.1]), ([], [1.0, 2.0]), ([0.0, 0.0, 1.0], [1.0, 2.0])]
    pairs += [([0.0, 1.0, 2.0, 3.0], [1.0, 1.1, 1.2]), ([1.0, float("inf"), 2.0], [2.0, 3.0])]
    for seed in (0, 11):
        expected = [ratio_interval(a, b, seed=seed) for a, b in pairs]
        assert _intervals(pairs, seed) == expected


def test_history_segments_carry_ratio_interval_of_the_segment_before() -> None:
    from results.compare import _segments

    rng = random.Random(5)
    values = [rng.gauss(10, 0.2) for _ in range(40)] + [rng.gauss(9, 0.2) for _ in range(35)]
    values += [rng.gauss(9.5, 0.2) for _ in range(25)]
    segments = _segments(values, [40, 75])
    assert [(s.start, s.end) for s in segments] == [(0, 40), (40, 75), (75, 100)]
    assert segments[0].ratio is None
    assert segments[1].ratio == ratio_interval(values[:40], values[40:75], seed=0)
    assert segments[2].ratio == ratio_interval(values[40:75], values[75:], seed=0)
