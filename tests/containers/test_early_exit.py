"""A container that exits before its output could be read still ends its job.

Attached after start, a container running /bin/true had often exited already and the
attach stream never ended: the job hung for ever (5 of 5), heartbeats kept the reaper off,
and neither cancel nor timeout_s reached it. The executor attaches before it starts the
container (as `docker run` does); this runs the real engine five times over.
"""

from __future__ import annotations

import threading
import uuid

import pytest

from jobs import services
from jobs.choices import JobStatus
from jobs.executors import docker as docker_executor
from jobs.executors.base import JobSpec, Outcome
from tests.factories import make_job
from tests.hooks import Recorder
from tests.waits import JOB_S

pytestmark = [pytest.mark.containers, pytest.mark.django_db]


@pytest.fixture(autouse=True)
def own_deployment(settings) -> None:
    """A deployment of this test's own: its job is never committed, so any other sweeper
    of the suite's deployment (a worker another test started, the reaper's broadcast) sees
    its container as a lost job's and removes it mid-run ("No such container", 1 run in 4
    of the clean-clone CI)."""
    settings.ROCPATH_DEPLOYMENT = f"test-ee-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def exiting(team, job_image, monkeypatch) -> tuple:
    """A running job and its spec, whose container runs /bin/true (exits at once)."""
    job = make_job(team, status=JobStatus.RUNNING, worker="w@h")
    spec = JobSpec(
        job_id=job.pk, kind="noop", job_dir=services.job_dir(job.pk), timeout_s=30, image=job_image
    )
    spec.job_dir.mkdir(parents=True)
    spec.params_file.write_text("{}")
    real = docker_executor.container_params

    def exits_at_once(spec: JobSpec, gpu) -> dict:
        params = real(spec, gpu)
        params["entrypoint"], params["command"] = ["/bin/true"], []
        return params

    monkeypatch.setattr(docker_executor, "container_params", exits_at_once)
    return job, spec


@pytest.mark.parametrize("run", range(5))
def test_a_container_that_exits_at_once_ends_its_job(exiting, run):
    job, spec = exiting
    ended: list[Outcome] = []
    runner = threading.Thread(
        target=lambda: ended.append(docker_executor.DockerExecutor().run(spec, Recorder())),
        daemon=True,  # a hung one must not keep the test process alive
    )
    runner.start()
    runner.join(JOB_S)
    docker_executor.remove_containers(jobs={job.pk})
    assert ended, f"the job of a container that ran /bin/true did not end in {JOB_S} s"
    assert ended[0].exit_code == 0 and not ended[0].timed_out


def test_a_container_left_by_an_earlier_try_of_the_same_attempt_is_replaced(exiting):
    job, spec = exiting
    # The container a killed worker left: same deployment, job and attempt, so same name.
    spec.out_dir.mkdir()
    docker_executor.client().containers.create(
        **docker_executor.container_params(spec, docker_executor.NO_GPU)
    )
    try:
        outcome = docker_executor.DockerExecutor().run(spec, Recorder())
    finally:
        docker_executor.remove_containers(jobs={job.pk})
    assert outcome.exit_code == 0, outcome
