"""Two rocpaths on one Docker engine: each sweeps only the containers it made.

Job ids repeat between deployments, so a sweep that listed every rocpath container and
removed those whose job is not running in its own database removed another deployment's
running job's container (and test suites lost theirs to each other). Real engine.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator

import docker
import pytest

from jobs import services
from jobs.executors import docker as docker_executor
from jobs.executors.base import JobSpec
from jobs.executors.gpu_profiles import NO_GPU

pytestmark = [pytest.mark.containers, pytest.mark.django_db]


@pytest.fixture
def engine(job_image) -> Iterator[docker.DockerClient]:
    client = docker.from_env()
    made: list[str] = []
    client.made = made  # type: ignore[attr-defined]
    yield client
    for container_id in made:  # only what this test created
        with contextlib.suppress(docker.errors.NotFound):
            client.api.remove_container(container_id, force=True)


def _sleeper(engine, image: str, deployment: str, job_id: int) -> str:
    """A container as a worker of ``deployment`` leaves it, for job ``job_id``."""
    container = engine.containers.run(
        image,
        ["sleep", "300"],
        entrypoint=[],
        name=f"rocpath-{deployment}-job-{job_id}-a1",
        labels={
            "rocpath.managed": "1",
            "rocpath.deployment": deployment,
            "rocpath.job": str(job_id),
            "rocpath.worker": "shared@host",
        },
        network_mode="none",
        detach=True,
    )
    engine.made.append(container.id)
    return container.id


def _exists(engine, container_id: str) -> bool:
    try:
        engine.api.inspect_container(container_id)
    except docker.errors.NotFound:
        return False
    return True


def test_a_sweep_removes_its_own_leftovers_and_never_another_deployments(
    engine, job_image, settings
):
    ours, theirs = f"a{uuid.uuid4().hex[:8]}", f"b{uuid.uuid4().hex[:8]}"
    settings.ROCPATH_DEPLOYMENT = ours
    job_id = 900_000_000 + uuid.uuid4().int % 1000  # no such job here: a leftover for A
    mine = _sleeper(engine, job_image, ours, job_id)
    other = _sleeper(engine, job_image, theirs, job_id + 1)  # B's job, running in B's database
    removed = services.sweep_containers()
    assert not _exists(engine, mine) and f"rocpath-{ours}-job-{job_id}-a1" in removed
    assert _exists(engine, other), "A's sweep removed a container of deployment B"
    assert engine.api.inspect_container(other)["State"]["Running"]


def test_a_restarted_worker_removes_only_its_own_deployments_containers(
    engine, job_image, settings
):
    ours, theirs = f"a{uuid.uuid4().hex[:8]}", f"b{uuid.uuid4().hex[:8]}"
    settings.ROCPATH_DEPLOYMENT = ours
    other = _sleeper(engine, job_image, theirs, 7)  # same worker name, same job id
    mine = _sleeper(engine, job_image, ours, 7)
    docker_executor.remove_containers(worker="shared@host")
    assert not _exists(engine, mine)
    assert _exists(engine, other), "A's worker removed a container of deployment B"


def test_containers_of_one_job_id_in_two_deployments_have_different_names(tmp_path, settings):
    spec = JobSpec(job_id=42, kind="noop", job_dir=tmp_path, timeout_s=60, image="i", attempt=1)
    names = set()
    for deployment in ("alpha", "beta"):
        settings.ROCPATH_DEPLOYMENT = deployment
        params = docker_executor.container_params(spec, NO_GPU)
        assert params["labels"]["rocpath.deployment"] == deployment
        names.add(params["name"])
    assert names == {"rocpath-alpha-job-42-a1", "rocpath-beta-job-42-a1"}
