"""A verdict's numbers are stored whatever they are (review of 0e0f7d1..d507ef0)."""

from __future__ import annotations

import pytest

from jobs.models import Measurement
from results import services
from tests.factories import make_project
from tests.results.helpers import environment, sampled_job

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("samples", "width"),
    [
        ([0.0] * 30, None),  # fell to zero: no interval at all
        # nearly half of its iterations at zero: the interval's low end is 0, its width
        # infinite; stored as such, PostgreSQL refused the detail ("Infinity") and the job
        # lost every verdict, this regression's alert first
        ([0.0] * 14 + [1.0] * 16, None),
    ],
)
def test_a_case_whose_throughput_collapsed_is_stored_and_announced_as_regressed(
    team, samples, width
):
    project, env = make_project(team), environment("box-1")
    services.pin_baseline(sampled_job(team, project, env, level=100.0, seed=1))
    job = sampled_job(team, project, env, level=100.0, seed=2)
    Measurement.objects.filter(job=job, case__m=512).update(
        samples=samples, value=sorted(samples)[len(samples) // 2]
    )
    verdicts = {v.case["m"]: v for v in services.compare_job(job.pk)}
    assert set(verdicts) == {512, 1024}
    broken = verdicts[512]
    assert broken.verdict == "regressed"
    broken.refresh_from_db()
    assert broken.detail["interval_width"] is width
