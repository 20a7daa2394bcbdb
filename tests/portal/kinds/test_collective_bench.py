"""The collective-bench job page draws bus bandwidth per collective, against the peak."""

from __future__ import annotations

import pytest

from jobs.choices import JobStatus
from portal.kinds import presenter_for
from stack.kinds import collective_bench
from tests.factories import make_job, make_team

pytestmark = pytest.mark.django_db


def test_the_chart_has_a_line_per_collective_and_the_link_peak():
    job = make_job(
        make_team(),
        kind=collective_bench.KIND.name,
        status=JobStatus.SUCCEEDED,
        summary={
            "ranks": 2,
            "backend": "nccl",
            "table": [
                {"op": "all_reduce", "bytes": 1024, "busbw_gbps": 0.1},
                {"op": "all_reduce", "bytes": 2**27, "busbw_gbps": 318.5},
                {"op": "all_gather", "bytes": 2**27, "busbw_gbps": 300.0},
            ],
            "link_peak": {"name": "NVLink4 (H100/H200 SXM)", "gbps": 900.0},
        },
    )
    (svg,) = presenter_for(job.kind).charts(job)
    assert "Bus bandwidth, 2 ranks (nccl)" in svg and "busbw (GB/s)" in svg
    for name in ("all_reduce", "all_gather", "peak: NVLink4"):
        assert name in svg


def test_a_job_without_a_table_draws_nothing():
    job = make_job(make_team(), kind=collective_bench.KIND.name, status=JobStatus.FAILED)
    assert presenter_for(job.kind).charts(job) == []
