"""The compare and history pages: the table, its permalink, the charts and the downloads."""

from __future__ import annotations

import csv
import html
import io
import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from jobs.choices import JobStatus
from tests.factories import make_environment, make_job, make_sampled_measurement, make_team

pytestmark = pytest.mark.django_db

BASE = [10.0, 10.2, 9.8, 10.1, 9.9]
FASTER = [12.0, 12.1, 11.9, 12.2, 11.8]


@pytest.fixture
def two_jobs(team):
    a = make_job(team, status=JobStatus.SUCCEEDED, environment=make_environment())
    b = make_job(team, status=JobStatus.SUCCEEDED, environment=make_environment("MI300X", "amd"))
    for m in (1024, 4096):
        make_sampled_measurement(a, 10.0, BASE, m=m, precision="fp16")
        make_sampled_measurement(b, 12.0, FASTER, m=m, precision="fp16")
    make_sampled_measurement(a, 20.0, BASE, m=1024, precision="int8", unit="TOPS")
    make_sampled_measurement(b, 24.0, FASTER, m=1024, precision="int8", unit="TOPS")
    return a, b


def section(page: str, name: str) -> str:
    return re.search(rf'<section class="card" id="{name}">.*?</section>', page, re.S).group(0)


def test_the_page_shows_the_aligned_table_and_flags_the_other_gpu(member_client, two_jobs):
    a, b = two_jobs
    page = member_client.get(f"/compare/?jobs={a.pk},{b.pk}").content.decode()

    table = section(page, "comparison")
    assert table.count("<tr data-case=") == 3
    assert "\N{MULTIPLICATION SIGN}1.200 [" in table and "better" in table
    columns = section(page, "columns")
    assert "GPU model: MI300X vs H200" in columns and "GPU vendor: amd vs nvidia" in columns


def test_each_unit_gets_its_own_chart(member_client, two_jobs):
    a, b = two_jobs
    page = member_client.get(f"/compare/?jobs={a.pk},{b.pk}").content.decode()
    charts = re.findall(r'<div class="chart card">(.*?)</div>', page, re.S)
    assert len(charts) == 2 and all("gemm · throughput" in c for c in charts)
    titles = [c for c in charts if "(TOPS)" in c], [c for c in charts if "(TFLOP/s)" in c]
    assert all(len(found) == 1 for found in titles)  # never both in one chart


def chart_bars(page: str) -> list[str]:
    """The hover text of every bar drawn on the page: "<case label>: <change> [<interval>]"."""
    return re.findall(r'<g class="bar"><title>(.*?)</title>', page)


def test_a_chart_names_each_case_by_what_differs_and_says_the_rest_once(member_client, two_jobs):
    a, b = two_jobs
    page = member_client.get(f"/compare/?jobs={a.pk},{b.pk}").content.decode()

    tflops = next(
        c for c in re.findall(r'<div class="chart card">.*?</div>', page, re.S) if "(TFLOP/s)" in c
    )
    labels = sorted(title.split(":")[0] for title in chart_bars(tflops))
    assert labels == ["m=1024", "m=4096"]  # not "m=1024 precision=fp16"
    assert "Every case shown: <code>fp16</code>" in tflops
    table = section(page, "comparison")
    assert '<code title="m=1024 precision=int8">' in table  # every parameter on hover


def test_each_bar_shows_the_tables_interval_as_its_whisker(member_client, two_jobs):
    a, b = two_jobs
    page = member_client.get(f"/compare/?jobs={a.pk},{b.pk}").content.decode()
    answer = member_client.get(f"/compare/?jobs={a.pk},{b.pk}&format=json").json()
    ratios = [row["cells"][1]["ratio"] for row in answer["rows"]]

    bars = chart_bars(page)
    assert len(bars) == 3 and page.count('<g class="ci">') == 3
    for ratio in ratios:
        low, high = ((ratio[k] - 1) * 100 for k in ("low", "high"))
        assert any(title.endswith(f"+20.0 % [{low:+.1f}, {high:+.1f}]") for title in bars)


def test_a_200_case_comparison_draws_the_20_most_changed_and_says_how_many_of_how_many(
    member_client, team
):
    a = make_job(team, status=JobStatus.SUCCEEDED, environment=make_environment())
    b = make_job(team, status=JobStatus.SUCCEEDED, environment=make_environment())
    for m in range(200):
        change = 1.5 if m == 150 else 1.0 + m / 10_000  # case 150 changed most
        make_sampled_measurement(a, 10.0, BASE, m=m, precision="bf16")
        make_sampled_measurement(
            b, 10.0 * change, [v * change for v in BASE], m=m, precision="bf16"
        )

    response = member_client.get(f"/compare/?jobs={a.pk},{b.pk}")
    page = response.content.decode()

    bars = chart_bars(page)
    assert len(bars) == 20
    assert bars[0].startswith("m=150: +50.0 %")  # the most changed first
    assert "The 20 most changed of 200 cases" in page
    assert section(page, "comparison").count("<tr data-case=") == 50
    assert "page 1 of 4" in page


def test_the_permalink_reproduces_the_table(member_client, two_jobs):
    a, b = two_jobs
    first = member_client.get(f"/compare/?jobs={b.pk}&jobs={a.pk}&seed=3").content.decode()
    permalink = html.unescape(re.search(r'id="permalink" href="([^"]+)"', first).group(1))
    assert permalink == f"/compare/?jobs={b.pk}%2C{a.pk}&seed=3"

    again = Client()
    again.force_login(two_jobs[0].team.memberships.get().user)
    assert section(again.get(permalink).content.decode(), "comparison") == section(
        first, "comparison"
    )


def test_the_csv_download_parses_into_one_line_per_case_and_job(member_client, two_jobs):
    a, b = two_jobs
    response = member_client.get(f"/compare/?jobs={a.pk},{b.pk}&format=csv")
    assert response["Content-Type"].startswith("text/csv")
    assert 'filename="comparison.csv"' in response["Content-Disposition"]

    lines = list(csv.DictReader(io.StringIO(response.content.decode())))

    assert len(lines) == 6
    tops = [line for line in lines if line["unit"] == "TOPS" and line["job"] == str(b.pk)]
    assert float(tops[0]["ratio"]) == pytest.approx(1.2)
    assert float(tops[0]["ratio_low"]) < 1.2 < float(tops[0]["ratio_high"])
    assert "GPU model: MI300X vs H200" in tops[0]["environment_differences"]
    assert {line["baseline_job"] for line in lines} == {str(a.pk)}


def test_the_json_download_is_the_api_answer(member_client, api, two_jobs):
    a, b = two_jobs
    query = f"jobs={a.pk},{b.pk}"
    download = member_client.get(f"/compare/?{query}&format=json").json()
    assert download == api.get(f"/api/v1/compare/?{query}").json()
    assert len(download["rows"]) == 3


def test_another_teams_job_cannot_be_compared(member_client, two_jobs):
    theirs = make_job(make_team("Other"), status=JobStatus.SUCCEEDED)
    make_sampled_measurement(theirs, 99.0, BASE, m=1024, precision="fp16")

    response = member_client.get(f"/compare/?jobs={two_jobs[0].pk},{theirs.pk}")
    assert response.status_code == 400
    assert f"no such job: {theirs.pk}" in response.content.decode()
    export = member_client.get(f"/compare/?jobs={theirs.pk}&format=csv")
    assert export.status_code == 400 and "99.0" not in export.content.decode()
    unfiltered = member_client.get("/compare/").content.decode()
    assert f'data-column="{theirs.pk}"' not in unfiltered


def test_the_page_takes_as_many_queries_for_200_cases_as_for_3(member_client, two_jobs):
    a, b = two_jobs

    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert member_client.get(f"/compare/?jobs={a.pk},{b.pk}").status_code == 200
        return len(queries)

    few = count()
    for m in range(200):
        make_sampled_measurement(a, 10.0 + m, BASE, m=m, precision="bf16")
        make_sampled_measurement(b, 12.0 + m, FASTER, m=m, precision="bf16")
    assert count() == few


def test_the_dashboard_offers_to_compare_ticked_jobs(member_client, two_jobs):
    page = member_client.get("/").content.decode()
    assert 'id="compare-form"' in page and 'action="/compare/"' in page
    for job in two_jobs:
        assert f'name="jobs" value="{job.pk}" form="compare-form"' in page


def test_the_history_page_draws_the_runs_and_marks_the_change_point(member_client, team):
    env = make_environment()
    noise = [0.2, -0.1, 0.15, -0.2, 0.05, 0.1, -0.15, 0.0, 0.1, -0.05]
    for value in [100 + n for n in noise * 2] + [80 + n for n in noise * 2]:
        job = make_job(team, status=JobStatus.SUCCEEDED, environment=env)
        make_sampled_measurement(job, value, [value], m=64)
    params = {"benchmark": "gemm", "metric": "throughput", "case": '{"m": 64}'}
    response = member_client.get("/history/", {**params, "fingerprint": env.fingerprint})

    page = response.content.decode()
    assert response.status_code == 200
    assert 'id="history-chart"' in page and "change point" in page and ">TFLOP/s<" in page
    assert "1 change point" in section(page, "segments")
    # 40 runs, 20 and 20, as a person counts them (it said 0-20 and 20-40; an en dash).
    assert "<td>1\u201320</td>" in section(page, "segments")
    assert "<td>21\u201340</td>" in section(page, "segments")
    exported = list(csv.DictReader(io.StringIO(
        member_client.get("/history/", {**params, "fingerprint": env.fingerprint, "format": "csv"})
        .content.decode()
    )))  # fmt: skip
    assert len(exported) == 40 and [line["change_point"] for line in exported].count("1") == 1


def test_every_run_of_a_long_history_is_reachable_in_the_runs_table(member_client, team):
    env = make_environment()
    jobs = []
    for i in range(120):
        jobs.append(job := make_job(team, status=JobStatus.SUCCEEDED, environment=env))
        make_sampled_measurement(job, 100.0 + i % 5, [100.0 + i % 5], m=64)
    params = {"benchmark": "gemm", "metric": "throughput", "case": '{"m": 64}'}
    first = member_client.get("/history/", {**params, "fingerprint": env.fingerprint})
    page = first.content.decode()
    assert page.count("<circle") < 120  # the chart draws no dot per run here
    runs = section(page, "runs")
    assert f"#{jobs[-1].pk}<" in runs and f"#{jobs[70].pk}<" in runs and "1\u201350 of 120" in runs
    assert f"#{jobs[69].pk}<" not in runs and "page=2#runs" in runs
    last = member_client.get("/history/", {**params, "fingerprint": env.fingerprint, "page": 3})
    runs = section(last.content.decode(), "runs")
    assert f"#{jobs[0].pk}<" in runs and "101\u2013120 of 120" in runs and "page=2#runs" in runs


def test_a_bad_history_query_is_a_400_naming_the_field(member_client):
    response = member_client.get("/history/?benchmark=gemm&metric=t&fingerprint=nope")
    assert response.status_code == 400 and "fingerprint:" in response.content.decode()
