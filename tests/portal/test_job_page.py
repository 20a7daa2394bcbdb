"""The job page of a large benchmark: paged and folded, its measurements downloadable."""

from __future__ import annotations

import csv
import io
import json

from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from jobs.choices import JobStatus
from jobs.models import Measurement
from portal.measurements import PER_PAGE
from portal.views import SUMMARY_INLINE_BYTES
from stack.kinds.blas_bench import KIND
from tests.factories import add_member, make_job, make_team, make_user


def _sweep(job, cases: int) -> None:
    """GEMM throughput and time of ``cases`` sizes, a bandwidth case, 5 samples each."""
    rows = []
    for i in range(cases):
        n = 256 + 64 * i
        case = {"backend": "torch", "precision": "bf16", "m": n, "n": n, "k": n, "transa": "N"}
        for metric, unit, value in (("throughput", "TFLOP/s", 1.0 + i), ("time", "ms", 2.0)):
            rows.append(
                Measurement(
                    job=job,
                    benchmark="gemm",
                    case=case,
                    metric=metric,
                    unit=unit,
                    value=value,
                    samples=[value] * 5,
                    better="higher",
                )
            )
    rows.append(
        Measurement(
            job=job,
            benchmark="bandwidth",
            case={"backend": "numpy", "op": "copy", "array_mib": 64},
            metric="bandwidth",
            unit="GB/s",
            value=20.0,
            samples=[20.0, 21.0],
            better="higher",
        )
    )
    Measurement.objects.bulk_create(rows)


def _bench_job(team, cases: int = 3, **fields):
    fields.setdefault("finished_at", timezone.now())
    job = make_job(team, kind=KIND.name, status=JobStatus.SUCCEEDED, **fields)
    _sweep(job, cases)
    return job


def test_the_measurement_table_shows_a_page_of_rows_folded_and_pages_on(member_client, team):
    job = _bench_job(team, cases=60)  # 121 measurements: three pages
    html = member_client.get(f"/jobs/{job.pk}/").content.decode()
    assert html.count('<td class="num">5</td>') == PER_PAGE  # the samples, counted
    assert "Rows 1\u201350 of 121" in html and "page 1 of 3" in html
    assert "<details>\n    <summary>Rows 1\u201350" in html  # folded until one pages through it
    last = member_client.get(f"/jobs/{job.pk}/?page=3").content.decode()
    assert "Rows 101\u2013121 of 121" in last and "<details open>" in last
    assert "array_mib=64" in last and "array_mib=64" not in html


def test_a_small_summary_is_folded_on_the_page_and_a_large_one_is_a_download(member_client, team):
    small = _bench_job(team, summary={"note": "hello"})
    html = member_client.get(f"/jobs/{small.pk}/").content.decode()
    assert '<section class="card" id="summary">' in html
    assert "<details>\n    <summary>The raw summary JSON" in html and "&quot;hello&quot;" in html
    large = _bench_job(team, summary={"tables": {"gemm": ["x" * 100] * SUMMARY_INLINE_BYTES}})
    html = member_client.get(f"/jobs/{large.pk}/").content.decode()
    assert "Too large to show here" in html and "xxxxxxxxxx" not in html
    response = member_client.get(f"/jobs/{large.pk}/summary.json")
    assert response.status_code == 200 and "attachment" in response["Content-Disposition"]
    assert json.loads(response.content)["tables"]["gemm"][0] == "x" * 100
    bare = _bench_job(team)
    assert 'id="summary"' not in member_client.get(f"/jobs/{bare.pk}/").content.decode()


def test_the_csv_download_holds_every_measurement_with_a_column_per_case_parameter(
    member_client, team
):
    job = _bench_job(team, cases=60)
    response = member_client.get(f"/jobs/{job.pk}/measurements.csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert f"job-{job.pk}-measurements.csv" in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert len(rows) == 121
    assert {"benchmark", "metric", "unit", "value", "samples", "case.m", "case.op"} <= set(rows[0])
    first = rows[0]
    assert (first["benchmark"], first["metric"], first["case.m"], first["samples"]) == (
        "gemm",
        "throughput",
        "256",
        "5",
    )
    assert first["case.op"] == "" and rows[-1]["case.op"] == "copy"
    assert float(rows[-1]["value"]) == 20.0


def test_the_json_download_holds_every_measurement_with_its_samples(member_client, team):
    job = _bench_job(team, cases=60)
    response = member_client.get(f"/jobs/{job.pk}/measurements.json")
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    data = json.loads(b"".join(response.streaming_content))
    assert data["job"] == job.pk and len(data["measurements"]) == 121
    assert data["measurements"][-1]["samples"] == [20.0, 21.0]
    assert data["measurements"][0]["case"]["m"] == 256


def test_another_teams_downloads_and_page_answer_404(team):
    job = _bench_job(team)
    stranger = make_user("mallory")
    add_member(make_team(), stranger)
    client = Client()
    client.force_login(stranger)
    for path in ("", "measurements.csv", "measurements.json", "summary.json"):
        assert client.get(f"/jobs/{job.pk}/{path}").status_code == 404
    assert client.get(f"/jobs/{job.pk}/measurements.xml").status_code == 404


def _queries(client: Client, url: str) -> int:
    cache.clear()  # the charts drawn, not served from the cache
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    return len(queries)


def test_the_pages_queries_do_not_grow_with_its_measurements(member_client, team):
    few, many = _bench_job(team, cases=2), _bench_job(team, cases=300)
    assert many.measurements.count() == 601
    member_client.get(f"/jobs/{few.pk}/")  # sessions and templates warmed alike
    assert _queries(member_client, f"/jobs/{few.pk}/") == _queries(
        member_client, f"/jobs/{many.pk}/"
    )


def test_an_ended_jobs_charts_are_drawn_once_and_served_from_the_cache(member_client, team):
    job = _bench_job(team, cases=3)
    cache.clear()
    first = member_client.get(f"/jobs/{job.pk}/").content.decode()
    Measurement.objects.filter(job=job).delete()  # were they drawn again, they would be gone
    again = member_client.get(f"/jobs/{job.pk}/").content.decode()
    assert first.count("<svg") == again.count("<svg") >= 2
    running = make_job(team, kind=KIND.name, status=JobStatus.RUNNING)
    _sweep(running, 2)
    member_client.get(f"/jobs/{running.pk}/")
    Measurement.objects.filter(job=running).delete()
    assert "<svg" not in member_client.get(f"/jobs/{running.pk}/").content.decode()


def test_a_claim_on_flagged_cases_says_too_noisy_to_conclude(member_client, team):
    """A summary stored before the noise check: the page judges it from the GEMM table."""
    summary = {
        "claims": [
            {
                "claim": "bf16_vs_fp32_speed",
                "text": "BF16 is about 2x as fast as FP32",
                "backend": "torch",
                "quoted": 2.0,
                "vendor_peak_ratio": 14.789,
                "measured": 17.4,
                "size": 8192,
                "layouts": {"bf16": "NN", "fp32": "NN"},
                "verdict": "better than quoted",
                "why_missing": None,
            },
            {
                "claim": "int8_vs_fp32_speed",
                "text": "INT8 is about 4x as fast as FP32",
                "backend": "torch",
                "quoted": 4.0,
                "vendor_peak_ratio": 29.6,
                "measured": 5.0,
                "size": 4096,
                "layouts": {"int8": "NT", "fp32": "NN"},
                "verdict": "better than quoted",
                "why_missing": None,
            },
        ],
        "tables": {
            "gemm": [
                {
                    "backend": "torch",
                    "precision": p,
                    "m": n,
                    "n": n,
                    "k": n,
                    "batch": 1,
                    "transa": "N",
                    "transb": "N",
                    "high_cv": noisy,
                    "cv_pct": cv,
                }
                for p, n, noisy, cv in (
                    ("bf16", 8192, True, 6.69),
                    ("fp32", 8192, False, 0.4),
                    ("fp32", 4096, False, 0.3),
                )
            ]
            + [
                {
                    "backend": "torch",
                    "precision": "int8",
                    "m": 4096,
                    "n": 4096,
                    "k": 4096,
                    "batch": 1,
                    "transa": "N",
                    "transb": "T",
                    "high_cv": False,
                    "cv_pct": 0.2,
                }
            ]
        },
        "flags": {"high_cv": ["torch gemm bf16 8192x8192x8192 NN: CV 6.69 %"]},
    }
    job = make_job(team, kind=KIND.name, status=JobStatus.SUCCEEDED, summary=summary)
    html = member_client.get(f"/jobs/{job.pk}/").content.decode()
    claims = html[html.index('id="claims"') : html.index('id="caveats"')]
    bf16, int8 = (row.split("</tr>")[0] for row in claims.split("<tr><td>")[1:3])
    assert "too noisy to conclude" in bf16 and "BF16 8192 NN: CV 6.69 %" in bf16
    assert "better than quoted" not in bf16 and "17.4" in bf16  # the ratio still shown
    assert "better than quoted" in int8 and "too noisy" not in int8
