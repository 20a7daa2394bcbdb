"""A job names a model of the worker's registry; the worker hands that folder to the job
read-only, and refuses a name the registry does not hold."""

from __future__ import annotations

import pytest

from jobs import services
from jobs.choices import JobStatus
from jobs.services.submit import submit_job
from stack.inference.models import ModelSpec, write_served_folder

pytest.importorskip("transformers")

TINY = {
    "device": "cpu",
    "requests": 4,
    "input_dist": "fixed",
    "input_len": 8,
    "output_len": 4,
    "concurrency": [2],
    "environment": False,
    "warmup_requests": 0,
}


@pytest.mark.process
def test_a_registered_model_reaches_the_job_and_is_served_from_its_folder(
    team, user, settings, tmp_path
):
    settings.ROCPATH_MODEL_ROOT = str(tmp_path / "models")
    write_served_folder(
        ModelSpec("tiny", preset="tiny-llama"), tmp_path / "models" / "team-llama", "float32"
    )
    job = submit_job(
        user=user,
        kind="inference-bench",
        team=team,
        params={**TINY, "registered_model": "team-llama"},
    )
    job.mark_queued("task-m")
    outcome = services.execute_job(job.pk, worker="w@h")
    job.refresh_from_db()
    assert outcome == JobStatus.SUCCEEDED, job.error
    model = job.summary["model"]
    assert model["name"] == "team-llama" and model["random_weights"] is False
    assert model["parameters"] == 205120  # the folder's config: tiny-llama's shapes
    assert job.summary["cases"][0]["stats"]["completed"] == 4


def test_a_name_the_registry_does_not_hold_ends_the_job_saying_so(team, user, settings, tmp_path):
    settings.ROCPATH_MODEL_ROOT = str(tmp_path)
    job = submit_job(
        user=user, kind="inference-bench", team=team, params={**TINY, "registered_model": "nope"}
    )
    job.mark_queued("task-n")
    assert services.execute_job(job.pk, worker="w@h") == JobStatus.ERRORED
    job.refresh_from_db()
    assert "registered model: no registered model 'nope'" in job.error
