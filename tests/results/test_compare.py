"""Comparison and history: what is aligned, the ratios on known samples, what is flagged."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django.utils.datastructures import MultiValueDict

from jobs.choices import JobStatus
from results.compare import (
    CompareQuery,
    HistoryQuery,
    QueryError,
    compare,
    environment_differences,
    history,
)
from results.stats import ratio_interval
from tests.factories import add_member, make_job, make_team, make_user
from tests.factories import make_environment as env
from tests.factories import make_sampled_measurement as measure

pytestmark = pytest.mark.django_db


def q(**params) -> CompareQuery:
    return CompareQuery.parse(MultiValueDict({k: [str(v)] for k, v in params.items()}))


BASE = [10.0, 10.2, 9.8, 10.1, 9.9]
FASTER = [12.0, 12.1, 11.9, 12.2, 11.8]


def test_cases_are_aligned_by_benchmark_case_and_metric_whatever_the_key_order(team, user):
    e = env()
    a = make_job(team, status=JobStatus.SUCCEEDED, environment=e)
    b = make_job(team, status=JobStatus.SUCCEEDED, environment=e)
    measure(a, 10.0, BASE, m=64, precision="fp16")
    measure(b, 12.0, FASTER, precision="fp16", m=64)  # same case, keys in another order
    measure(a, 5.0, BASE, m=64, precision="bf16")  # only in a
    measure(b, 1.5, [1.5], m=64, precision="fp16", metric="time", unit="ms", better="lower")

    result = compare(user, q(jobs=f"{a.pk},{b.pk}"))

    keyed = {(r.case["precision"], r.metric): r for r in result.rows}
    assert set(keyed) == {("fp16", "throughput"), ("bf16", "throughput"), ("fp16", "time")}
    fp16 = keyed["fp16", "throughput"]
    assert [c.value for c in fp16.cells] == [10.0, 12.0]
    assert keyed["bf16", "throughput"].cells[1] is None
    assert keyed["fp16", "time"].cells[0] is None


def test_the_ratio_is_ratio_interval_of_the_raw_samples_and_reads_in_the_better_direction(
    team, user
):
    e = env()
    a = make_job(team, status=JobStatus.SUCCEEDED, environment=e)
    b = make_job(team, status=JobStatus.SUCCEEDED, environment=e)
    measure(a, 10.0, BASE, m=1)
    measure(b, 12.0, FASTER, m=1)
    measure(a, 10.0, BASE, m=1, metric="time", unit="ms", better="lower")
    measure(b, 12.0, FASTER, m=1, metric="time", unit="ms", better="lower")
    measure(a, 10.0, BASE, m=2)
    measure(b, 10.0, [10.1, 9.9, 10.0, 10.2, 9.8], m=2)

    rows = {(r.case["m"], r.metric): r for r in compare(user, q(jobs=f"{a.pk},{b.pk}")).rows}

    expected = ratio_interval(BASE, FASTER, seed=0)
    cell = rows[1, "throughput"].cells[1]
    assert cell.ratio == expected
    assert cell.ratio.value == pytest.approx(12.0 / 10.0)
    assert cell.ratio.low > 1 and cell.reading == "better"
    assert rows[1, "time"].cells[1].reading == "worse"  # 20 % more milliseconds
    assert rows[2, "throughput"].cells[1].reading == "even"
    assert rows[1, "throughput"].cells[0].ratio is None  # the baseline is not divided by itself


def test_the_oldest_job_is_the_baseline_unless_one_is_named(team, user):
    e = env()
    now = timezone.now()
    old = make_job(team, status=JobStatus.SUCCEEDED, environment=e, created_at=now - timedelta(1))
    new = make_job(team, status=JobStatus.SUCCEEDED, environment=e, created_at=now)
    measure(old, 10.0, BASE, m=1)
    measure(new, 12.0, FASTER, m=1)

    named_newest_first = compare(user, q(jobs=f"{new.pk},{old.pk}"))
    assert [c.job.pk for c in named_newest_first.columns] == [old.pk, new.pk]
    assert named_newest_first.baseline.job == old

    flipped = compare(user, q(jobs=f"{old.pk},{new.pk}", baseline=new.pk))
    assert flipped.baseline.job == new
    assert flipped.rows[0].cells[0].ratio.value == pytest.approx(10.0 / 12.0)


def test_only_one_sample_gives_a_ratio_without_an_interval(team, user):
    e = env()
    a = make_job(team, status=JobStatus.SUCCEEDED, environment=e)
    b = make_job(team, status=JobStatus.SUCCEEDED, environment=e)
    measure(a, 10.0, [], m=1)
    measure(b, 11.0, [], m=1)

    cell = compare(user, q(jobs=f"{a.pk},{b.pk}")).rows[0].cells[1]

    assert cell.ratio.value == pytest.approx(1.1)
    assert cell.ratio.low is None and cell.reading == ""


def test_environments_that_differ_are_flagged_by_what_differs():
    h200 = env(libraries={"cublas": "12.4.5"})
    mi300 = env("MI300X", "amd", "gfx942", libraries={"cublas": "12.4.5", "rocblas": "4.2"})
    newer_cublas = env(libraries={"cublas": "12.6.0"})

    differences = {d.what: (d.baseline, d.current) for d in environment_differences(h200, mi300)}
    assert differences["GPU vendor"] == ("nvidia", "amd")
    assert differences["GPU model"] == ("H200", "MI300X")
    assert differences["GPU arch"] == ("sm_90", "gfx942")
    assert differences["rocblas"] == ("", "4.2")
    assert "cublas" not in differences
    assert [str(d) for d in environment_differences(h200, newer_cublas)] == [
        "cublas: 12.6.0 vs 12.4.5"
    ]
    assert environment_differences(h200, env(libraries={"cublas": "12.4.5"})) == []


def test_columns_carry_their_differences_from_the_baseline(team, user):
    a = make_job(team, status=JobStatus.SUCCEEDED, environment=env())
    b = make_job(team, status=JobStatus.SUCCEEDED, environment=env("MI300X", "amd", "gfx942"))
    measure(a, 10.0, BASE, m=1)
    measure(b, 12.0, FASTER, m=1)

    columns = compare(user, q(jobs=f"{a.pk},{b.pk}")).columns

    assert columns[0].differences == []
    assert {d.what for d in columns[1].differences} == {"GPU vendor", "GPU model", "GPU arch"}


def test_a_case_measured_in_different_units_gets_no_ratio_and_says_why(team, user):
    e = env()
    a = make_job(team, status=JobStatus.SUCCEEDED, environment=e)
    b = make_job(team, status=JobStatus.SUCCEEDED, environment=e)
    measure(a, 10.0, BASE, m=1)
    measure(b, 12.0, FASTER, m=1, unit="TOPS")

    row = compare(user, q(jobs=f"{a.pk},{b.pk}")).rows[0]

    assert row.cells[1].ratio is None
    assert row.flags == ["units differ (TFLOP/s, TOPS): no ratio"]


def test_filters_pick_the_newest_matching_jobs_by_environment_facets(team, user):
    h200, mi300 = env(), env("MI300X", "amd", "gfx942", libraries={"rocblas": "4.2"})
    jobs = [
        make_job(team, status=JobStatus.SUCCEEDED, environment=e, kind="blas-bench")
        for e in (h200, mi300, h200)
    ]
    for job in jobs:
        measure(job, 10.0, BASE, m=1)
    make_job(team, status=JobStatus.SUCCEEDED, environment=h200)  # measured nothing

    def picked(**params):
        return [c.job.pk for c in compare(user, q(**params)).columns]

    assert picked(vendor="amd") == [jobs[1].pk]
    assert picked(gpu_model="H200,MI300X") == [j.pk for j in jobs]
    assert picked(library="rocblas:4.2") == [jobs[1].pk]
    assert picked(kind="blas-bench", gpu_arch="sm_90") == [jobs[0].pk, jobs[2].pk]
    assert picked(since=(timezone.now() + timedelta(days=2)).date().isoformat()) == []


def test_another_teams_job_reads_as_missing(team, user):
    other = make_team("Other")
    theirs = make_job(other, status=JobStatus.SUCCEEDED, environment=env())
    measure(theirs, 10.0, BASE, m=1)
    ours = make_job(team, status=JobStatus.SUCCEEDED, environment=env())
    measure(ours, 10.0, BASE, m=1)

    with pytest.raises(QueryError) as caught:
        compare(user, q(jobs=f"{ours.pk},{theirs.pk}"))
    assert caught.value.field == "jobs" and str(theirs.pk) in caught.value.message
    assert [c.job.pk for c in compare(user, q()).columns] == [ours.pk]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"jobs": "1,x"}, "jobs"),
        ({"jobs": ",".join(map(str, range(1, 10)))}, "jobs"),
        ({"kind": "no-such-kind"}, "kind"),
        ({"library": "rocblas"}, "library"),
        ({"since": "yesterday"}, "since"),
        ({"since": "2026-02-01", "until": "2026-01-01"}, "since"),
        ({"jobs": "1,2", "baseline": "3"}, "baseline"),
        ({"project": "one"}, "project"),
    ],
)
def test_bad_parameters_are_refused_by_name(params, field):
    with pytest.raises(QueryError) as caught:
        q(**params)
    assert caught.value.field == field


def test_the_query_survives_its_own_permalink():
    query = q(jobs="3,1", benchmark="gemm", vendor="amd,nvidia", library="rocblas:4.2", seed=7)
    again = CompareQuery.parse(MultiValueDict({k: [v] for k, v in query.params()}))
    assert again == query


def test_a_comparison_takes_the_same_queries_for_2_or_200_cases(team, user):
    e = env()
    a = make_job(team, status=JobStatus.SUCCEEDED, environment=e)
    b = make_job(team, status=JobStatus.SUCCEEDED, environment=env("MI300X", "amd", "gfx942"))

    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            compare(user, q(jobs=f"{a.pk},{b.pk}"))
        return len(queries)

    for job in (a, b):
        measure(job, 10.0, BASE, m=0)
    few = count()
    for m in range(1, 200):
        for job in (a, b):
            measure(job, 10.0 + m, BASE, m=m)
    assert count() == few <= 3


def make_series(team, e, values):
    start = timezone.now() - timedelta(days=len(values))
    jobs = []
    for i, v in enumerate(values):
        job = make_job(
            team, status=JobStatus.SUCCEEDED, environment=e, created_at=start + timedelta(hours=i)
        )
        measure(job, v, [v], m=4096, precision="fp16")
        jobs.append(job)
    return jobs


def history_query(e, **extra) -> HistoryQuery:
    params = {
        "benchmark": "gemm",
        "metric": "throughput",
        "case": '{"precision": "fp16", "m": 4096}',
        "fingerprint": e.fingerprint,
        **extra,
    }
    return HistoryQuery.parse(MultiValueDict({k: [v] for k, v in params.items()}))


def test_history_is_one_case_on_one_environment_identity_with_the_step_marked(team, user):
    e = env()
    noise = [0.2, -0.1, 0.15, -0.2, 0.05, 0.1, -0.15, 0.0, 0.1, -0.05]
    values = [100 + n for n in noise * 3] + [90 + n for n in noise * 3]
    jobs = make_series(team, e, values)
    other_gpu = make_job(team, status=JobStatus.SUCCEEDED, environment=env("MI300X", "amd"))
    measure(other_gpu, 1.0, [1.0], m=4096, precision="fp16")
    measure(jobs[0], 1.0, [1.0], m=1024, precision="fp16")  # another case

    result = history(user, history_query(e))

    assert [p.job_id for p in result.points] == [j.pk for j in jobs]
    assert result.change_points == [30]
    assert [(s.start, s.end) for s in result.segments] == [(0, 30), (30, 60)]
    assert result.segments[1].ratio.value == pytest.approx(0.9, abs=0.005)
    assert result.segments[1].ratio.high < 1
    assert result.unit == "TFLOP/s" and result.better == "higher"


def test_history_keeps_the_newest_runs_and_only_the_users_teams(team, user):
    e = env()
    jobs = make_series(team, e, [10.0] * 6)
    stranger = make_user("mallory")
    add_member(make_team("Elsewhere"), stranger)

    newest = history(user, history_query(e, limit="4"))

    assert [p.job_id for p in newest.points] == [j.pk for j in jobs[2:]]
    assert history(stranger, history_query(e)).points == []


def test_history_takes_two_queries_for_10_or_100_runs(team, user):
    e = env()
    make_series(team, e, [10.0] * 10)
    with CaptureQueriesContext(connection) as few:
        history(user, history_query(e))
    make_series(team, e, [10.0] * 90)
    with CaptureQueriesContext(connection) as many:
        history(user, history_query(e))
    assert len(few) == len(many) == 2


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"metric": "throughput", "fingerprint": "ab" * 32}, "benchmark"),
        ({"benchmark": "gemm", "metric": "t", "case": "[1]", "fingerprint": "ab" * 32}, "case"),
        ({"benchmark": "gemm", "metric": "t", "case": "{", "fingerprint": "ab" * 32}, "case"),
        ({"benchmark": "gemm", "metric": "t", "fingerprint": "not hex"}, "fingerprint"),
        ({"benchmark": "gemm", "metric": "t", "fingerprint": "ab" * 32, "limit": "5000"}, "limit"),
    ],
)
def test_bad_history_parameters_are_refused_by_name(params, field):
    with pytest.raises(QueryError) as caught:
        HistoryQuery.parse(MultiValueDict({k: [v] for k, v in params.items()}))
    assert caught.value.field == field
