"""A job names a model of the worker's registry; the worker hands that folder to the job
read-only, and refuses a name the registry does not hold."""

from __future__ import annotations

import pytest

from jobs import services
from jobs.choices import JobStatus
from jobs.services.submit import SubmissionError, submit_job
from stack.inference.models import ModelSpec, write_served_folder
from tests.factories import make_worker

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


def cpu_worker(name, models):
    inventory = {"gpus": [], "models": models, "cpus": 2, "memory_mb": 4096}
    return make_worker(name, host=name.partition("@")[2], inventory=inventory)


@pytest.mark.process
def test_a_registered_model_reaches_the_job_and_is_served_from_its_folder(
    team, user, settings, tmp_path
):
    cpu_worker("celery@cpu-a", ["team-llama"])
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


def test_a_job_goes_only_to_the_workers_that_hold_its_model(team, user):
    cpu_worker("celery@cpu-a", ["other"])
    holder = cpu_worker("celery@cpu-b", ["team-llama"])
    job = submit_job(
        user=user,
        kind="inference-bench",
        team=team,
        params={**TINY, "registered_model": "team-llama"},
    )
    assert job.queue == f"rocpath-host-{holder.host}"


def test_a_model_no_live_worker_holds_is_refused_at_submit_naming_what_the_fleet_has(team, user):
    cpu_worker("celery@cpu-a", ["llama-a", "qwen-b"])
    with pytest.raises(SubmissionError) as refused:
        submit_job(
            user=user,
            kind="inference-bench",
            team=team,
            params={**TINY, "registered_model": "nope"},
        )
    [message] = refused.value.errors["params"]
    assert "no live worker able to run the job holds the model 'nope'" in message
    assert "llama-a, qwen-b" in message


def test_a_model_gone_from_the_root_since_the_worker_announced_it_ends_the_job_saying_so(
    team, user, settings, tmp_path
):
    cpu_worker("celery@cpu-a", ["nope"])  # announced, then removed from the root
    settings.ROCPATH_MODEL_ROOT = str(tmp_path)
    job = submit_job(
        user=user, kind="inference-bench", team=team, params={**TINY, "registered_model": "nope"}
    )
    job.mark_queued("task-n")
    assert services.execute_job(job.pk, worker="w@h") == JobStatus.ERRORED
    job.refresh_from_db()
    assert "registered model: no registered model 'nope'" in job.error
