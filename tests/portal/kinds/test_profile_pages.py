"""profile jobs on the pages: the GEMM shapes with a button replaying them through blas-bench,
and the diff of two profile jobs — on the real H200 results stored as jobs."""

from __future__ import annotations

import json
from pathlib import Path

from jobs.choices import JobStatus
from jobs.models import Job, Measurement
from stack.kinds.blas_bench import KIND as BLAS_BENCH
from stack.kinds.profile import KIND as PROFILE
from tests.factories import make_job, make_team

H200 = Path(__file__).resolve().parents[2].parent / "docs/results/profile-h200"
PROJECTION = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT"
# What the profile kind records for that transformer block (8 x 512 tokens, width 1024).
SHAPES = [
    {
        "precision": "bf16",
        "m": 3072,
        "n": 4096,
        "k": 1024,
        "batch": 1,
        "transa": "T",
        "transb": "N",
        "calls": 10,
    },
    {
        "precision": "bf16",
        "m": 4096,
        "n": 4096,
        "k": 1024,
        "batch": 1,
        "transa": "T",
        "transb": "N",
        "calls": 10,
    },
    {
        "precision": "bf16",
        "m": 1024,
        "n": 4096,
        "k": 4096,
        "batch": 1,
        "transa": "T",
        "transb": "N",
        "calls": 10,
    },
]


def stored_profile(team, factor: float = 1.0, match: str = "", **summary) -> Job:
    """The H200 transformer profile as a job row, its kernels matching ``match`` made
    ``factor`` times slower (samples and totals)."""
    document = json.loads((H200 / "transformer-bf16/result.json").read_text())
    job = make_job(
        team,
        kind=PROFILE.name,
        status=JobStatus.SUCCEEDED,
        summary={**document["summary"], **summary},
    )
    for m in document["measurements"]:
        scale = factor if match and match in m["case"].get("kernel", "") else 1.0
        timed = m["metric"] in ("kernel_time", "kernel_mean_time")
        Measurement.objects.create(
            job=job,
            benchmark=m["benchmark"],
            case=m["case"],
            metric=m["metric"],
            unit=m["unit"],
            value=m["value"] * (scale if timed else 1.0),
            samples=[s * scale for s in m["samples"]] if timed else m["samples"],
            better=m["better"],
        )
    return job


def test_the_job_page_lists_the_gemm_shapes_with_a_replay_button(member_client, team):
    job = stored_profile(team, gemm_shapes=SHAPES)
    html = member_client.get(f"/jobs/{job.pk}/").content.decode()
    assert "GEMM shapes this workload ran" in html and "Replay these shapes with blas-bench" in html
    assert '<td class="num">3072</td>' in html
    assert f'action="/jobs/{job.pk}/profile-diff/"' in html


def test_replay_submits_a_blas_bench_job_with_exactly_those_shapes(
    member_client, team, no_enqueue, django_capture_on_commit_callbacks
):
    job = stored_profile(team, gemm_shapes=SHAPES)
    with django_capture_on_commit_callbacks(execute=True):
        response = member_client.post(f"/jobs/{job.pk}/replay-shapes/")
    replay = Job.objects.get(kind=BLAS_BENCH.name)
    assert response.status_code == 302 and response["Location"] == f"/jobs/{replay.pk}/"
    assert replay.params["precisions"] == ["bf16"] and replay.params["sizes"] == []
    assert replay.params["shapes"][0] == {
        "m": 4096, "n": 3072, "k": 1024, "batch": 1, "transa": "N", "transb": "T"
    }  # fmt: skip
    assert len(replay.params["shapes"]) == 3 and replay.team == team
    assert no_enqueue == [replay.pk]


def test_a_profile_without_shapes_replays_nothing_and_says_so(member_client, team, no_enqueue):
    job = stored_profile(team, gemm_shapes=[])
    response = member_client.post(f"/jobs/{job.pk}/replay-shapes/", follow=True)
    assert "recorded no GEMM shape" in response.content.decode()
    assert not Job.objects.filter(kind=BLAS_BENCH.name).exists()


def test_the_diff_page_names_the_kernel_that_got_slower(member_client, team):
    baseline = stored_profile(team)
    current = stored_profile(team, 1.14, PROJECTION)
    response = member_client.get(f"/jobs/{current.pk}/profile-diff/?baseline={baseline.pk}")
    html = response.content.decode()
    assert response.status_code == 200
    # one kernel serves the block's four projections: compared by its time a step
    assert f"the regression is in `{PROJECTION}`, +14.0 % of its time a step" in html
    assert html.count("unchanged") >= 4


def test_a_baseline_that_is_not_a_visible_profile_job_is_a_400_naming_it(member_client, team):
    current = stored_profile(team)
    foreign = stored_profile(make_team())
    for baseline in (str(foreign.pk), "abc", "999999"):
        response = member_client.get(f"/jobs/{current.pk}/profile-diff/?baseline={baseline}")
        assert response.status_code == 400
        assert f"baseline: no profile job {baseline} you can see" in response.content.decode()
