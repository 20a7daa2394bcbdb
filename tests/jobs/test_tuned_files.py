"""The registry of tuned GEMM files: registered from the job that tuned them, refused to a
job when stale, handed to a job as an input the container checks before applying it."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs import services
from jobs.choices import JobStatus
from jobs.finished import announce_finished
from jobs.models import Artifact, Environment, TunedFile
from jobs.services.paths import artifact_dir
from jobs.services.submit import SubmissionError, image_for, submit_job
from jobs.services.tuned_files import freshness, register_from_job
from stack.kinds.noop import KIND as NOOP
from stack.kinds.tune_gemm import KIND as TUNE_GEMM
from stack.tune.registry import CURRENT, STALE, UNCONFIRMED
from tests.factories import make_job, make_team

FIXTURE = Path(__file__).resolve().parents[1] / "stack/tune/fixtures/tunableop_results0-mi300x.csv"
ARTIFACT = "tune/tunableop_results.csv"
VALIDATORS = {
    "PT_VERSION": "2.6.0+rocm6.3",
    "ROCM_VERSION": "6.3.1.0-48-7a5e3a1",
    "HIPBLASLT_VERSION": "0.12.0-a5b6b9b3",
    "ROCBLAS_VERSION": "4.3.0-1f8c4f9a",
    "GCN_ARCH_NAME": "gfx942:sramecc+:xnack-",
}


def tuned_job(team, status=JobStatus.SUCCEEDED, declare=True):
    """A finished tune job as ingest leaves it: its summary, its artifact kept on disk."""
    summary = {}
    if declare:
        summary["tuned_file"] = {
            "artifact": ARTIFACT,
            "method": "tunableop",
            "validators": VALIDATORS,
            "gpu_arch": "gfx942",
            "gpu_name": "AMD Instinct MI300X",
            "backend": "rocm",
            "entries": 4,
        }
    job = make_job(team, status=status, kind=TUNE_GEMM.name, summary=summary)
    path = artifact_dir(job.pk) / ARTIFACT
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(FIXTURE.read_bytes())
    Artifact.objects.create(job=job, path=ARTIFACT, size=path.stat().st_size, sha256="x")
    return job


def environment(torch="2.6.0+rocm6.3", arch="gfx942"):
    data = {
        "software": {"torch_version": torch, "rocm_version": "6.3.1", "libraries": {}},
        "gpus": [{"vendor": "amd", "arch": arch, "model": "AMD Instinct MI300X"}],
    }
    sha = f"{torch}-{arch}-{Environment.objects.count()}"
    return Environment.objects.create(data_sha256=sha, fingerprint="f", data=data)


def test_a_succeeded_job_that_declares_a_tuned_file_has_it_registered_when_it_ends(
    team, django_capture_on_commit_callbacks
):
    job = tuned_job(team)
    with django_capture_on_commit_callbacks(execute=True):
        announce_finished(job.pk, JobStatus.SUCCEEDED)
    tuned = TunedFile.objects.get(job=job)
    assert tuned.team == team and tuned.gpu_arch == "gfx942" and tuned.entries == 4
    assert tuned.torch_version == "2.6.0+rocm6.3" and tuned.hipblaslt_version == "0.12.0-a5b6b9b3"
    assert tuned.content == FIXTURE.read_text() and len(tuned.sha256) == 64
    assert register_from_job(job) == tuned  # once, however often it is asked


def test_a_failed_job_or_one_that_declares_nothing_registers_nothing(team):
    assert register_from_job(tuned_job(team, status=JobStatus.FAILED)) is None
    assert register_from_job(tuned_job(team, declare=False)) is None
    assert not TunedFile.objects.exists()


def test_freshness_follows_the_environment_the_stack_moved_to(team):
    tuned = register_from_job(tuned_job(team))
    assert freshness(tuned, environment().data).status == UNCONFIRMED  # no hipBLASLt version
    newer = freshness(tuned, environment(torch="2.7.0+rocm6.4").data)
    assert newer.status == STALE and "PT_VERSION" in newer.reasons[0]
    assert freshness(tuned, None).status == UNCONFIRMED
    libraries = {"hipblaslt": "0.12.0-a5b6b9b3", "rocblas": "4.3.0-1f8c4f9a"}
    full = environment().data
    full["software"]["libraries"] = libraries
    assert freshness(tuned, full).status == CURRENT


def test_a_job_is_refused_a_stale_file_or_another_teams_and_told_why(team, user):
    tuned = register_from_job(tuned_job(team))
    image = image_for(NOOP.name)
    ran = make_job(team, status=JobStatus.SUCCEEDED, image=image)
    ran.environment = environment(torch="2.7.0+rocm6.4")
    ran.finished_at = ran.started_at
    ran.save()
    with pytest.raises(SubmissionError) as stale:
        submit_job(user=user, kind=NOOP.name, team=team, tuned_file=tuned)
    assert stale.value.errors["tuned_file"][0].startswith("The tuned file is stale for this stack")
    other = register_from_job(tuned_job(make_team()))
    with pytest.raises(SubmissionError) as foreign:
        submit_job(user=user, kind=NOOP.name, team=team, tuned_file=other)
    assert foreign.value.errors["tuned_file"] == ["This tuned file belongs to another team."]


@pytest.mark.process
def test_a_job_run_with_a_file_gets_it_as_input_and_the_container_says_it_did_not_apply(team, user):
    tuned = register_from_job(tuned_job(team))
    job = submit_job(user=user, kind=NOOP.name, team=team, tuned_file=tuned, params={"steps": 1})
    job.mark_queued("task-t")
    assert services.execute_job(job.pk, worker="w@h") == JobStatus.SUCCEEDED
    job.refresh_from_db()
    used = job.summary["tuned_file_used"]
    assert used["applied"] is False and used["tuned_file_id"] == tuned.pk
    assert used["reasons"] in (
        ["no GPU with TunableOp here: the tuned file cannot apply"],
        ["PyTorch is not installed here: TunableOp cannot run"],
    )
    warning = job.events.filter(kind="log", message__contains="NOT applied").get()
    assert "tuned file" in warning.message


def test_the_api_submits_a_job_with_a_tuned_file_of_the_team_and_refuses_anothers(
    api, team, no_enqueue
):
    ours = register_from_job(tuned_job(team))
    theirs = register_from_job(tuned_job(make_team()))
    response = api.post("/api/v1/jobs/", {"kind": NOOP.name, "tuned_file": ours.pk}, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["tuned_file"] == ours.pk
    refused = api.post("/api/v1/jobs/", {"kind": NOOP.name, "tuned_file": theirs.pk}, format="json")
    assert refused.status_code == 400
    assert refused.json()["tuned_file"] == [f"No tuned file {theirs.pk} among your teams'."]
