"""Baselines are pinned per scope; a job is compared with its scope's baseline, once."""

from __future__ import annotations

import pytest

from jobs.choices import JobStatus
from jobs.models import Measurement
from results import services
from results.models import Baseline, Verdict
from results.signals import regression_found
from tests.factories import make_job, make_project
from tests.results.helpers import environment, sampled_job

pytestmark = pytest.mark.django_db


@pytest.fixture
def project(team):
    return make_project(team)


@pytest.fixture
def env():
    return environment("box-1")


def test_pinning_a_job_makes_it_the_baseline_of_its_project_benchmark_and_environment(
    team, user, project, env
):
    job = sampled_job(team, project, env)
    [baseline] = services.pin_baseline(job, user=user)
    assert (baseline.project, baseline.benchmark, baseline.fingerprint, baseline.job) == (
        project,
        "gemm",
        env.fingerprint,
        job,
    )


def test_pinning_another_job_replaces_the_scopes_baseline(team, project, env):
    first, second = sampled_job(team, project, env), sampled_job(team, project, env, seed=1)
    services.pin_baseline(first)
    services.pin_baseline(second)
    assert list(Baseline.objects.values_list("job_id", flat=True)) == [second.pk]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"status": JobStatus.FAILED}, "job"),
        ({"project": None}, "job"),
        ({"environment": None}, "job"),
    ],
)
def test_a_job_that_cannot_be_a_baseline_is_refused_naming_why(team, project, env, change, field):
    job = sampled_job(team, project, env)
    for name, value in change.items():
        setattr(job, name, value)
    job.save()
    with pytest.raises(services.BaselineError) as err:
        services.pin_baseline(job)
    assert err.value.field == field


def test_a_benchmark_the_job_did_not_measure_is_refused(team, project, env):
    with pytest.raises(services.BaselineError) as err:
        services.pin_baseline(sampled_job(team, project, env), benchmark="fft")
    assert err.value.field == "benchmark"


def test_a_planted_regression_is_found_case_by_case_with_its_numbers(team, project, env):
    services.pin_baseline(sampled_job(team, project, env, level=100.0, seed=1))
    slow = sampled_job(team, project, env, level=90.0, seed=2)
    verdicts = services.compare_job(slow.pk)
    assert sorted(v.case["m"] for v in verdicts) == [512, 1024]
    for v in verdicts:
        assert v.verdict == "regressed"
        assert v.ratio == pytest.approx(0.9, rel=0.02)
        assert v.ratio_low < v.ratio < v.ratio_high < 1
        assert v.p_value < 0.001


def test_a_job_like_its_baseline_is_unchanged(team, project, env):
    services.pin_baseline(sampled_job(team, project, env, seed=1))
    same = sampled_job(team, project, env, seed=2)
    assert {v.verdict for v in services.compare_job(same.pk)} == {"unchanged"}


def test_a_job_compared_twice_keeps_one_set_of_verdicts(team, project, env):
    services.pin_baseline(sampled_job(team, project, env, seed=1))
    job = sampled_job(team, project, env, level=80.0, seed=2)
    services.compare_job(job.pk)
    assert services.compare_job(job.pk) == []
    assert Verdict.objects.filter(job=job).count() == 2


def test_a_new_baseline_replaces_the_verdicts_against_the_old_one(team, project, env):
    services.pin_baseline(sampled_job(team, project, env, seed=1))
    job = sampled_job(team, project, env, level=80.0, seed=2)
    services.compare_job(job.pk)
    newer = sampled_job(team, project, env, level=80.0, seed=3)
    services.pin_baseline(newer)
    services.compare_job(job.pk)
    assert set(Verdict.objects.filter(job=job).values_list("baseline_job_id", "verdict")) == {
        (newer.pk, "unchanged")
    }


def test_jobs_outside_the_scope_are_not_compared(team, project, env):
    services.pin_baseline(sampled_job(team, project, env, seed=1))
    other_machine = sampled_job(team, project, environment("box-2"), level=50.0)
    other_project = sampled_job(team, make_project(team), env, level=50.0)
    failed = sampled_job(team, project, env, level=50.0, status=JobStatus.FAILED)
    for job in (other_machine, other_project, failed):
        assert services.compare_job(job.pk) == []
        assert not services.has_baseline_in_scope(job.pk) or job is failed
    assert Verdict.objects.count() == 0


def test_the_baseline_job_is_not_compared_with_itself(team, project, env):
    base = sampled_job(team, project, env)
    services.pin_baseline(base)
    assert not services.has_baseline_in_scope(base.pk)
    assert services.compare_job(base.pk) == []


def test_cases_without_samples_or_missing_from_the_baseline_are_skipped(team, project, env):
    services.pin_baseline(sampled_job(team, project, env, sizes=(512,), seed=1))
    job = sampled_job(team, project, env, sizes=(512, 2048), seed=2)
    Measurement.objects.create(
        job=job, environment=env, benchmark="gemm", case={"m": 512}, metric="cv",
        unit="%", value=1.0, samples=[1.0], better="lower",
    )  # fmt: skip
    assert [v.case["m"] for v in services.compare_job(job.pk)] == [512]


def test_a_regression_is_announced_once_with_its_verdicts(
    team, project, env, django_capture_on_commit_callbacks
):
    heard = []

    def listen(sender, signal, **kwargs):
        heard.append(kwargs)

    regression_found.connect(listen, dispatch_uid="test-regression-heard")
    try:
        base = sampled_job(team, project, env, seed=1)
        services.pin_baseline(base)
        slow = sampled_job(team, project, env, level=85.0, seed=2)
        with django_capture_on_commit_callbacks(execute=True):
            written = services.compare_job(slow.pk)
        with django_capture_on_commit_callbacks(execute=True):
            services.compare_job(slow.pk)
    finally:
        regression_found.disconnect(dispatch_uid="test-regression-heard")
    assert heard == [
        {
            "project_id": project.pk,
            "job_id": slow.pk,
            "baseline_job_id": base.pk,
            "verdict_ids": sorted(v.pk for v in written),
        }
    ]


def test_open_regressions_are_the_users_teams_unacknowledged_ones(team, user, project, env):
    services.pin_baseline(sampled_job(team, project, env, seed=1))
    slow = sampled_job(team, project, env, level=85.0, seed=2)
    services.compare_job(slow.pk)
    assert {v.job_id for v in services.open_regressions(user)} == {slow.pk}
    services.acknowledge(Verdict.objects.filter(job=slow))
    assert not services.open_regressions(user).exists()


def test_another_teams_regressions_are_not_open_to_the_user(user, env):
    from tests.factories import make_team

    other = make_team("Other")
    project = make_project(other)
    services.pin_baseline(sampled_job(other, project, env, seed=1))
    services.compare_job(sampled_job(other, project, env, level=85.0, seed=2).pk)
    assert Verdict.objects.filter(verdict="regressed").exists()
    assert not services.open_regressions(user).exists()


def test_a_job_with_no_environment_is_never_in_a_scope(team, project, env):
    services.pin_baseline(sampled_job(team, project, env))
    job = make_job(team, status=JobStatus.SUCCEEDED, project=project)
    assert not services.has_baseline_in_scope(job.pk)


def drifted(document: dict, rng, cv: float, slowdown: float = 0.0) -> dict:
    """The H200 run again: each throughput case scaled by its own run-level drift."""
    from tests.roadmap.conftest import derived

    doc = derived(document, vendor="nvidia", model="NVIDIA H200", arch="sm_90")
    for m in doc["measurements"]:
        if m["metric"] == "throughput":
            f = float(rng.lognormal(0.0, cv)) / (1.0 + slowdown)
            m["value"] *= f
            m["samples"] = [v * f for v in m["samples"]]
    return doc


@pytest.mark.slow
def test_on_the_real_h200_run_a_job_judged_after_a_steady_history_flags_a_ten_percent_slowdown(
    team,
):
    """The H200 blas-bench document as eight runs of one scope, each case drifting about
    1 % run to run, then a run 10 % slower: its steady cases (the ones whose samples can
    carry a verdict) are regressed with the other cases' noise lent, none "unchanged";
    its spread ones say why they cannot tell."""
    import numpy as np

    from tests.roadmap.conftest import h200_document, ingest

    project = make_project(team, "steady")
    document, rng = h200_document(), np.random.default_rng(39)
    runs = [ingest(project, drifted(document, rng, 0.01)) for _ in range(8)]
    services.pin_baseline(runs[0], benchmark="gemm")
    slow = ingest(project, drifted(document, rng, 0.01, slowdown=0.10))
    verdicts = [v for v in services.compare_job(slow.pk) if v.metric == "throughput"]
    kinds = {v.verdict for v in verdicts}
    assert kinds <= {"regressed", "noisy"} and "unchanged" not in kinds
    steady = [v for v in verdicts if v.verdict != "noisy"]
    assert len(steady) >= 35
    assert all(v.detail["run_noise_lent_df"] > 0 and "warning" not in v.detail for v in steady)
    assert all("too noisy (CV" in v.detail["reason"] for v in verdicts if v.verdict == "noisy")


def test_a_scope_with_two_earlier_runs_warns_beside_each_verdict(team):
    import numpy as np

    from tests.roadmap.conftest import h200_document, ingest

    project = make_project(team, "young")
    document, rng = h200_document(), np.random.default_rng(40)
    base = ingest(project, drifted(document, rng, 0.01))
    services.pin_baseline(base, benchmark="gemm")
    ingest(project, drifted(document, rng, 0.01))
    judged = ingest(project, drifted(document, rng, 0.01))
    verdicts = services.compare_job(judged.pk)
    assert verdicts and all(
        v.detail["warning"].startswith("2 runs of history: at least 5") for v in verdicts
    )
