"""FLOP rates in a unit fit to their size (issue 36: a CPU's "TFLOP/s 0.0006"), on the
results of a real blas-bench run: numpy on this machine's CPU, in-process."""

from __future__ import annotations

import io
import re

import pytest
from django.urls import reverse

from jobs.choices import JobStatus
from jobs.services.ingest import ingest_result
from portal.units import rate_unit, scaled
from stack.events import Emitter
from stack.kinds import get_kind, validate_params
from stack.runtime import RunContext, build_result
from tests.factories import make_job

pytest.importorskip("numpy")


def test_a_rate_is_shown_in_the_unit_that_fits_it():
    assert scaled(0.0006, "TFLOP/s") == (600.0, "MFLOP/s")
    assert scaled(0.05, "TFLOP/s") == (50.0, "GFLOP/s")
    assert scaled(780.5, "TFLOP/s") == (780.5, "TFLOP/s")
    assert scaled(0.002, "TOPS") == (2.0, "GOPS")
    assert scaled(0.0006, "GB/s") == (0.0006, "GB/s")  # not a FLOP rate: as it is
    assert scaled(None, "TFLOP/s") == (None, "TFLOP/s")
    # one column or axis, one unit: the largest value picks it
    assert rate_unit("TFLOP/s", [0.0004, 0.02, None]) == (1000.0, "GFLOP/s")


def _cpu_gemm_document(tmp_path) -> dict:
    """blas-bench's result.json for two tiny GEMMs on the CPU: rates of a few GFLOP/s."""
    params = validate_params(
        "blas-bench",
        {
            "backends": ["numpy"],
            "families": ["gemm"],
            "sizes": [32, 64],
            "shapes": [],
            "precisions": ["fp64"],
            "min_reps": 3,
            "max_reps": 6,
            "case_budget_s": 0.05,
            "environment": False,
            "telemetry": False,
        },
    )
    out = tmp_path / "out"
    out.mkdir()
    ctx = RunContext(out=out, emit=Emitter(io.StringIO()), work=tmp_path)
    result = get_kind("blas-bench").load_runner()(params, ctx)
    return build_result("blas-bench", result, "2026-12-01T00:00:00Z", "2026-12-01T00:00:01Z", out)


def test_a_cpu_runs_gemm_rates_read_in_gflops_or_mflops_on_the_job_page(
    member_client, team, tmp_path
):
    document = _cpu_gemm_document(tmp_path)
    stored = [
        m
        for m in document["measurements"]
        if (m["benchmark"], m["metric"]) == ("gemm", "throughput")
    ]
    assert stored and all(m["unit"] == "TFLOP/s" and m["value"] < 0.1 for m in stored)
    job = make_job(team, kind="blas-bench", status=JobStatus.RUNNING)
    ingest_result(job, document, None, exit_code=0)

    page = member_client.get(reverse("portal:job-detail", args=[job.pk])).content.decode()
    rows = re.findall(
        r"<td>gemm</td>.*?<td>throughput</td><td class=\"num\">([^<]*)</td><td>([^<]*)</td>", page
    )
    assert len(rows) == len(stored)
    for value, unit in rows:
        assert unit in ("GFLOP/s", "MFLOP/s"), unit
        assert 1 <= float(value) < 1000
    charts = re.findall(r'class="title plot_title"[^>]*>([^<]*)<', page)
    assert any(t.startswith("GEMM: throughput (GFLOP/s)") or "(MFLOP/s)" in t for t in charts)
    assert not any("TFLOP/s" in t for t in charts)


def test_the_compare_page_shows_a_cpu_runs_rates_in_a_fitting_unit(member_client, team, tmp_path):
    document = _cpu_gemm_document(tmp_path)
    jobs = [make_job(team, kind="blas-bench", status=JobStatus.RUNNING) for _ in range(2)]
    for job in jobs:
        ingest_result(job, document, None, exit_code=0)

    page = member_client.get(f"/compare/?jobs={jobs[0].pk},{jobs[1].pk}").content.decode()
    units = re.findall(r"<td>throughput</td><td>([^<]*)</td>", page)
    assert units and set(units) <= {"GFLOP/s", "MFLOP/s"}
    values = re.findall(
        r'<tr data-case="[^"]*" data-metric="throughput">.*?<td class="num[^"]*">([\d.]+) ', page
    )
    assert values and all(1 <= float(v) < 1000 for v in values)
    charts = re.findall(r'<div class="chart card">(.*?)</div>', page, re.S)
    throughput = [c for c in charts if "gemm · throughput" in c]
    assert throughput and all("TFLOP/s" not in c for c in throughput)
    assert all("(GFLOP/s)" in c or "(MFLOP/s)" in c for c in throughput)  # in the title
