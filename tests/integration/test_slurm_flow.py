"""REST → Celery → the slurm executor → a real Slurm (munged, slurmdbd, slurmctld, slurmd)
→ ingested."""

from __future__ import annotations

import contextlib
import os
import re
import signal

import pytest

from jobs import services
from jobs.choices import JobStatus
from jobs.executors.slurm import INVALID_JOB, current_state, final_state, listed_jobs, scancel
from jobs.models import GpuLease, Job, JobEvent
from tests.slurmcluster import SlurmCluster, free_port
from tests.waits import JOB_S, START_S, STOP_S, wait_until
from tests.workers import TERMINAL, wait_for_status

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def slurm_id_of(job_id: int, timeout: float = START_S) -> str:
    """The Slurm job id the executor logged for a rocpath job."""
    found: list[str] = []

    def logged() -> bool:
        event = JobEvent.objects.filter(job_id=job_id, message__startswith="Slurm job ").first()
        if event is not None:
            found.append(event.message.split()[2])
        return bool(found)

    assert wait_until(logged, timeout), f"job {job_id} was never submitted to Slurm"
    return found[0]


def wait_for_slurm_state(cluster, slurm_id: str, state: str, timeout: float = START_S) -> None:
    def reached() -> bool:
        done = cluster.client("squeue", "-h", "-t", "all", "-j", slurm_id, "-o", "%T", check=False)
        return done.stdout.strip() == state

    assert wait_until(reached, timeout, 0.1), f"Slurm job {slurm_id} never reached {state}"


def submit(api, body: dict) -> int:
    response = api.post("/api/v1/jobs/", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


def sleeper(api, cluster) -> tuple[int, str]:
    """A two-minute noop, returned once its Slurm job runs."""
    job_id = submit(api, {"kind": "noop", "params": {"seconds": 120, "steps": 120}})
    slurm_id = slurm_id_of(job_id)
    wait_for_slurm_state(cluster, slurm_id, "RUNNING")
    return job_id, slurm_id


def test_a_noop_job_runs_as_a_slurm_job_and_is_ingested_with_its_output_lines(
    slurm_worker, slurm_cluster, api
):
    params = {"seconds": 0.5, "steps": 3, "log_lines": 2}
    job_id = submit(api, {"kind": "noop", "params": params})
    job = wait_for_status(job_id, TERMINAL)
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert job.executor == "slurm" and job.exit_code == 0
    assert job.measurements.exists()
    logs = JobEvent.objects.filter(job_id=job_id, kind="log").values_list("message", flat=True)
    assert sum(1 for line in logs if line.startswith("noop log line")) == 2, list(logs)
    slurm_id = slurm_id_of(job_id)
    ended = final_state(slurm_id)
    assert ended is not None and ended.state == "COMPLETED"
    progress = JobEvent.objects.filter(job_id=job_id, kind="progress")
    assert [round(e.pct) for e in progress.order_by("id")] == [33, 67, 100]


def test_a_gpu_job_gets_its_gpus_from_slurms_gres_and_no_lease_of_the_worker(
    slurm_worker, slurm_cluster, api
):
    job_id = submit(api, {"kind": "noop", "hardware": {"gpu_count": 2}})
    job = wait_for_status(job_id, TERMINAL)
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert not GpuLease.objects.exists()  # the worker host has no GPU: a lease would fail
    shown = slurm_cluster.client("scontrol", "show", "job", "-o", slurm_id_of(job_id)).stdout
    assert "TresPerNode=gres:gpu:2" in shown


def test_a_probe_through_slurm_stores_the_node_environment(slurm_worker, api):
    job = wait_for_status(submit(api, {"kind": "probe"}), TERMINAL)
    assert job.status == JobStatus.SUCCEEDED, job.error
    environment = api.get(f"/api/v1/environments/{job.environment_id}/").json()
    assert environment["data"]["host"]["cpu_cores"] >= 1


def test_a_canceled_job_is_scancelled_and_its_slurm_job_ends_cancelled(
    slurm_worker, slurm_cluster, api
):
    job_id, slurm_id = sleeper(api, slurm_cluster)
    assert api.post(f"/api/v1/jobs/{job_id}/cancel/").status_code == 202
    job = wait_for_status(job_id, TERMINAL, timeout=STOP_S)
    assert job.status == JobStatus.CANCELED
    ended = final_state(slurm_id)
    assert ended is not None and ended.state == "CANCELLED"


def test_a_node_lost_mid_run_ends_the_job_errored_with_node_fail_and_its_reason(
    slurm_worker, slurm_cluster, api
):
    job_id, slurm_id = sleeper(api, slurm_cluster)
    try:
        slurm_cluster.set_node("down", "rack power lost")
        job = wait_for_status(job_id, TERMINAL, timeout=JOB_S)
    finally:
        slurm_cluster.client(
            "scontrol", "update", f"nodename={slurm_cluster.node}", "state=resume", check=False
        )
    assert job.status == JobStatus.ERRORED
    assert f"the Slurm job {slurm_id} ended NODE_FAIL on {slurm_cluster.node}" in job.error
    assert "its node failed" in job.error and "rack power lost" in job.error


def test_a_gpu_job_asking_more_than_the_partition_has_is_refused_at_submission(slurm_worker, api):
    """The worker announced its partition (two GPUs per node): the fleet refuses at once,
    before sbatch is ever asked."""
    response = api.post(
        "/api/v1/jobs/", {"kind": "noop", "hardware": {"gpu_count": 3}}, format="json"
    )
    assert response.status_code == 400
    (problem,) = response.json()["hardware"]
    assert problem.startswith("gpu_count: no live worker has 3 GPUs") and "2 such GPU" in problem
    assert not Job.objects.exists()


def test_a_job_asking_more_than_the_partition_has_is_refused_with_sbatchs_message(
    slurm_worker, api
):
    """A CPU job is not matched against the fleet: sbatch's refusal ends it, never retried."""
    hardware = {"memory_mb": 4096}  # the node has 2048 MiB
    job = wait_for_status(submit(api, {"kind": "noop", "hardware": hardware}), TERMINAL)
    assert job.status == JobStatus.ERRORED
    assert job.error.startswith("sbatch refused the job: ")
    assert "Memory specification can not be satisfied" in job.error
    assert job.attempt == 1  # permanent: never queued again


def test_a_slurm_job_cancelled_outside_rocpath_ends_errored_saying_so(
    slurm_worker, slurm_cluster, api
):
    job_id, slurm_id = sleeper(api, slurm_cluster)
    slurm_cluster.client("scancel", slurm_id)
    job = wait_for_status(job_id, TERMINAL, timeout=STOP_S)
    assert job.status == JobStatus.ERRORED
    # the uid only sacct knows (scontrol says CANCELLED, not by whom)
    assert f"the Slurm job {slurm_id} was cancelled outside rocpath by uid 0" in job.error


def test_a_slurm_id_is_read_and_cancelled_only_under_its_jobs_name(
    slurm_worker, slurm_cluster, api
):
    """What keeps a reused id (a cluster restarted without its state) from being taken
    for ours: Slurm's own name filters, on a real job."""
    job_id, slurm_id = sleeper(api, slurm_cluster)
    name = slurm_cluster.client("squeue", "-h", "-j", slurm_id, "-o", "%j").stdout.strip()
    assert current_state(slurm_id, "rocpath-someone-else") is None
    assert current_state(slurm_id, name).state == "RUNNING"
    assert scancel(slurm_id, name="rocpath-someone-else")  # matches nothing: a no-op
    assert current_state(slurm_id, name).state == "RUNNING"
    api.post(f"/api/v1/jobs/{job_id}/cancel/")
    assert wait_for_status(job_id, TERMINAL, timeout=STOP_S).status == JobStatus.CANCELED


def test_the_sweep_cancels_slurm_jobs_whose_rocpath_job_no_longer_runs(
    slurm_worker, slurm_cluster, api
):
    job_id, slurm_id = sleeper(api, slurm_cluster)
    assert services.sweep_slurm_jobs() == []  # running: left alone
    Job.objects.get(pk=job_id).fail_to_run("ended by the test, as a reaper would")
    assert services.sweep_slurm_jobs() == [slurm_id]
    wait_for_slurm_state(slurm_cluster, slurm_id, "CANCELLED", timeout=STOP_S)
    assert slurm_id not in listed_jobs()


def test_a_worker_restarting_cancels_the_slurm_jobs_of_its_previous_life(
    slurm_worker, slurm_cluster, api
):
    job_id, slurm_id = sleeper(api, slurm_cluster)
    slurm_worker.sigkill_main_process()
    slurm_worker.start()  # same name: ends its running jobs and scancels their Slurm jobs
    job = wait_for_status(job_id, TERMINAL)
    assert job.status == JobStatus.ERRORED and "restarted" in job.error
    wait_for_slurm_state(slurm_cluster, slurm_id, "CANCELLED", timeout=STOP_S)


def test_the_partition_inventory_is_what_slurm_says_of_its_node(slurm_cluster, settings):
    from jobs.executors.slurm import partition_inventory

    settings.ROCPATH_SLURM_GPU = "amd:AMD Instinct MI300X:gfx942:196608"
    inventory = partition_inventory()
    assert inventory["partition"] == slurm_cluster.partition and inventory["nodes"] == 1
    assert (inventory["cpus"], inventory["memory_mb"], inventory["max_time_s"]) == (2, 2048, 3600)
    assert [g["index"] for g in inventory["gpus"]] == [0, 1]
    assert inventory["gpus"][0] | {"index": 0} == {
        "index": 0,
        "vendor": "amd",
        "model": "AMD Instinct MI300X",
        "arch": "gfx942",
        "memory_bytes": 196608 * 1024 * 1024,
    }
    assert re.fullmatch(r"rpp[0-9a-f]{8}", inventory["partition"])


def test_a_controller_that_does_not_answer_is_an_error_that_may_pass(
    slurm_cluster, monkeypatch, tmp_path
):
    from jobs.executors.base import ExecutorError, JobSpec
    from jobs.executors.slurm import SlurmExecutor, current_state, submit

    down = tmp_path / "down.conf"
    port = free_port()  # nobody listens there: the controller is "down"
    down.write_text(
        re.sub(r"(?m)^SlurmctldPort=\d+$", f"SlurmctldPort={port}", slurm_cluster.conf.read_text())
    )
    monkeypatch.setenv("SLURM_CONF", str(down))
    folder = tmp_path / "jobs" / "1"
    folder.mkdir(parents=True)
    (folder / "params.json").write_text("{}")
    spec = JobSpec(job_id=1, kind="noop", job_dir=folder, timeout_s=60)
    SlurmExecutor().prepare(spec)
    with pytest.raises(ExecutorError) as refused:
        submit(spec)
    assert not refused.value.permanent
    assert "Unable to contact slurm controller" in str(refused.value)
    with pytest.raises(ExecutorError) as lost:
        current_state("1")
    assert not lost.value.permanent


# --- a cluster that forgets ended jobs at once: what rocpath reads then, only sacct has ----
@pytest.fixture(scope="module")
def forgetful_cluster(tmp_path_factory, slurm_cluster):  # slurm_cluster: its skip / fail
    """A second private cluster (its own slurmdbd and database) whose slurmctld purges a job
    2 s after its end (MinJobAge=2): scontrol and squeue no longer know it, sacct does."""
    cluster = SlurmCluster(tmp_path_factory.mktemp("slurm-forgetful"), min_job_age_s=2)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def forgetful_worker(transactional_db, settings, tmp_path, forgetful_cluster):
    from tests.workers import _start_worker

    forgetful_cluster.wait_for_node("idle")
    settings.ROCPATH_EXECUTOR = "slurm"
    handle = _start_worker(settings, tmp_path, ROCPATH_EXECUTOR="slurm", **forgetful_cluster.env)
    yield handle
    handle.stop()


@contextlib.contextmanager
def paused(worker):
    """The worker's processes stopped (SIGSTOP): it looks at Slurm again only once resumed."""
    os.killpg(worker.proc.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.killpg(worker.proc.pid, signal.SIGCONT)


def wait_until_forgotten(cluster, slurm_id: str) -> None:
    def forgotten() -> bool:
        done = cluster.client("scontrol", "show", "job", "-o", slurm_id, check=False)
        return done.returncode != 0 and INVALID_JOB in done.stderr

    assert wait_until(forgotten, JOB_S, 0.2), f"slurmctld still knows Slurm job {slurm_id}"


def test_a_failed_runners_exit_status_is_read_from_sacct_once_slurmctld_forgot_the_job(
    forgetful_worker, forgetful_cluster, api
):
    job_id = submit(api, {"kind": "noop", "params": {"seconds": 3, "exit_status": "failed"}})
    slurm_id = slurm_id_of(job_id)
    with paused(forgetful_worker):
        wait_until_forgotten(forgetful_cluster, slurm_id)
        assert forgetful_cluster.sacct(slurm_id, "State,ExitCode") == "FAILED|1:0\n"
    job = wait_for_status(job_id, TERMINAL)
    assert job.status == JobStatus.FAILED, job.error
    # without sacct the Slurm job would have vanished: its result read, no exit status known
    assert job.exit_code == 1


def test_a_node_failure_is_read_from_sacct_once_slurmctld_forgot_the_job(
    forgetful_worker, forgetful_cluster, api
):
    job_id, slurm_id = sleeper(api, forgetful_cluster)
    try:
        with paused(forgetful_worker):
            forgetful_cluster.set_node("down", "rack power lost")
            wait_until_forgotten(forgetful_cluster, slurm_id)
        job = wait_for_status(job_id, TERMINAL, timeout=JOB_S)
    finally:
        forgetful_cluster.client(
            "scontrol", "update", f"nodename={forgetful_cluster.node}", "state=resume", check=False
        )
    assert job.status == JobStatus.ERRORED
    assert f"the Slurm job {slurm_id} ended NODE_FAIL on {forgetful_cluster.node}" in job.error
    assert "rack power lost" in job.error and "vanished" not in job.error
