"""A docker worker announces what its engine can run: the job images it has, and the
container caps as what a job may get (jobs.fleet)."""

from __future__ import annotations

import docker
import pytest

from jobs.models import Worker as WorkerRow

pytestmark = [pytest.mark.containers, pytest.mark.integration, pytest.mark.slow]


def test_a_docker_worker_announces_its_engines_images_and_its_container_caps(
    docker_worker, settings, job_image
):
    row = WorkerRow.objects.get(name__startswith=docker_worker.queue + "@")
    assert row.executor == "docker" and row.is_live
    image = docker.from_env().images.get(job_image)
    assert job_image in row.inventory["images"] and image.id in row.inventory["images"]
    assert row.inventory["cpus"] == settings.ROCPATH_DOCKER_MAX_CPUS
    assert row.inventory["memory_mb"] == settings.ROCPATH_DOCKER_MAX_MEMORY_MB
