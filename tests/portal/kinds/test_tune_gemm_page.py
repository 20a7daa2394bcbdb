"""tune-gemm on the job page: speedups, the single-candidate note, the registered file and
whether it still fits the team's latest stack."""

from __future__ import annotations

from jobs.choices import JobStatus
from jobs.models import Environment
from jobs.services.tuned_files import register_from_job
from tests.factories import make_job
from tests.jobs.test_tuned_files import tuned_job


def test_the_page_shows_speedups_and_the_single_candidate_note(member_client, team):
    job = tuned_job(team)
    job.summary.update(
        single_candidate_note="TunableOp on this CUDA build had a single candidate, 'Default'",
        speedups=[{"shape": "bf16 TN m=3072 n=4096 k=1024", "speedup": 1.002, "low": 0.99,
                   "high": 1.01}],
    )  # fmt: skip
    job.save()
    html = member_client.get(f"/jobs/{job.pk}/").content.decode()
    assert "had a single candidate, &#x27;Default&#x27;" in html
    assert "bf16 TN m=3072 n=4096 k=1024" in html and "0.99 to 1.01" in html


def test_a_registered_file_is_shown_stale_once_the_team_moved_to_a_newer_pytorch(
    member_client, team
):
    job = tuned_job(team)
    tuned = register_from_job(job)
    later = make_job(team, status=JobStatus.SUCCEEDED, image=job.image)
    data = {
        "software": {"torch_version": "2.7.0+rocm6.4", "rocm_version": "6.4.0"},
        "gpus": [{"vendor": "amd", "arch": "gfx942"}],
    }
    later.environment = Environment.objects.create(data_sha256="n", fingerprint="n", data=data)
    later.finished_at = later.started_at
    later.save()
    html = member_client.get(f"/jobs/{job.pk}/").content.decode()
    assert f"Registered tuned file #{tuned.pk}" in html
    assert "<strong>stale</strong>" in html
    assert "PT_VERSION: the file was tuned with 2.6.0+rocm6.3, this stack has 2.7.0+rocm6.4" in html
