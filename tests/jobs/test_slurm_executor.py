"""The slurm executor's parts that need no cluster: the script and command lines it builds,
and how it reads Slurm's answers (real outputs of this machine's Slurm 22.05, saved in
tests/jobs/data/slurm; sacct's lines from the test cluster's slurmdbd, the
``sacct -n -P -X -j ID -o State,ExitCode,Reason,NodeList`` the executor runs)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jobs import services
from jobs.choices import JobStatus
from jobs.executors import ENGINES, engine_class, slurm
from jobs.executors.base import ExecutorError, JobSpec, Outcome
from jobs.executors.slurm import (
    ENDED,
    SlurmRun,
    SlurmState,
    accounting_disabled,
    apptainer_argv,
    batch_script,
    enroot_argv,
    gres_gpus,
    lost_cause,
    parse_duration_s,
    parse_fields,
    parse_job_name,
    parse_node_reason,
    parse_sacct,
    parse_scontrol_job,
    parse_squeue,
    poll_interval,
    sbatch_argv,
    slurm_job_name,
    unreachable,
)
from tests.factories import make_job

DATA = Path(__file__).parent / "data" / "slurm"


def captured(name: str) -> str:
    return (DATA / name).read_text()


@pytest.fixture
def spec(tmp_path: Path) -> JobSpec:
    folder = tmp_path / "jobs" / "42"
    folder.mkdir(parents=True)
    (folder / "params.json").write_text("{}")
    return JobSpec(job_id=42, kind="noop", job_dir=folder, timeout_s=61, image="rocpath/debian:1")


def test_slurm_is_a_registered_engine_that_allocates_its_own_gpus():
    assert "slurm" in ENGINES
    assert engine_class("slurm").allocates_gpus and not engine_class("local").allocates_gpus


# --- reading Slurm's answers ---------------------------------------------------------------
def test_scontrol_of_a_failed_job_gives_its_exit_code_reason_and_node():
    state = parse_scontrol_job(captured("scontrol-failed.txt"))
    assert state == SlurmState(
        state="FAILED", reason="NonZeroExitCode", nodes="rpn57e2a177", exit_code=3, signal=0
    )


def test_scontrol_of_a_running_job_says_running():
    assert parse_scontrol_job(captured("scontrol-running.txt")).state == "RUNNING"


def test_scontrol_of_a_cancelled_job_keeps_the_runners_exit_status():
    state = parse_scontrol_job(captured("scontrol-cancelled.txt"))
    assert (state.state, state.exit_code, state.signal) == ("CANCELLED", 143, 0)


def test_scontrol_of_a_job_whose_node_went_down_says_node_fail():
    state = parse_scontrol_job(captured("scontrol-node-fail.txt"))
    assert (state.state, state.reason) == ("NODE_FAIL", "NodeDown")


def test_scontrol_of_an_unknown_job_is_none():
    assert parse_scontrol_job("slurm_load_jobs error: Invalid job id specified\n") is None


def test_a_down_nodes_reason_is_read_to_the_end_of_its_line():
    assert parse_node_reason(captured("scontrol-node-down.txt")).startswith(
        "rack power lost [root@"
    )
    assert parse_node_reason(captured("scontrol-node.txt")) == ""


def test_squeue_lines_give_state_reason_and_nodes():
    assert parse_squeue("RUNNING|None|rpn1\n") == SlurmState("RUNNING", "", "rpn1")
    assert parse_squeue("PENDING|Resources|\n") == SlurmState("PENDING", "Resources", "")
    assert parse_squeue("") is None


CAPTURED_NODE = "rpn857aeecc"  # the node of the cluster sacct's lines were captured on


def test_sacct_says_who_cancelled_a_job():
    state = parse_sacct(captured("sacct-cancelled.txt"))
    assert state == SlurmState("CANCELLED", "", CAPTURED_NODE, 0, 0, cancelled_by="0")


def test_sacct_gives_a_failed_jobs_exit_status_and_a_completed_jobs_zero():
    assert parse_sacct(captured("sacct-failed.txt")) == SlurmState(
        "FAILED", "", CAPTURED_NODE, 3, 0
    )
    assert parse_sacct(captured("sacct-completed.txt")) == SlurmState(
        "COMPLETED", "", CAPTURED_NODE, 0, 0
    )


def test_sacct_names_the_ends_of_slurms_own_making_and_a_job_still_running():
    for name, state in (
        ("sacct-node-fail.txt", "NODE_FAIL"),
        ("sacct-timeout.txt", "TIMEOUT"),
        ("sacct-running.txt", "RUNNING"),
    ):
        parsed = parse_sacct(captured(name))
        assert parsed is not None and parsed.state == state and parsed.nodes == CAPTURED_NODE
    assert "RUNNING" not in ENDED  # a record slurmdbd has not seen end yet: looked at again


def test_sacct_knowing_no_such_job_prints_nothing_and_reads_as_unknown():
    assert captured("sacct-unknown.txt") == ""
    assert parse_sacct(captured("sacct-unknown.txt")) is None


def test_sacct_without_slurmdbd_is_told_apart_and_scontrol_used_instead():
    assert accounting_disabled(captured("sacct-disabled.txt"))
    assert not accounting_disabled(captured("sacct-completed.txt"))


def test_sbatch_refusing_a_job_is_permanent_and_a_controller_down_is_not():
    for name in ("sbatch-gres-refused.txt", "sbatch-mem-refused.txt", "sbatch-time-refused.txt"):
        assert not unreachable(captured(name)), name
    assert unreachable(
        "sbatch: error: Batch job submission failed: Unable to contact slurm controller "
        "(connect failure)"
    )


def test_slurm_time_limits_are_read_in_seconds():
    assert parse_duration_s("01:00:00") == 3600
    assert parse_duration_s("1-02:00:00") == 93600
    assert parse_duration_s("05:30") == 330
    assert parse_duration_s("30") == 1800
    assert parse_duration_s("UNLIMITED") is None


def test_gpus_are_counted_from_a_nodes_gres_with_or_without_a_type():
    assert gres_gpus("gpu:2") == (2, "")
    assert gres_gpus("gpu:mi300x:8(S:0-1)") == (8, "mi300x")
    assert gres_gpus("nvme:1,gpu:a100:4") == (4, "a100")
    assert gres_gpus("(null)") == (0, "")


def test_the_partitions_time_limit_and_nodes_are_read_from_scontrol():
    fields = parse_fields(captured("scontrol-partition.txt"))
    assert (fields["MaxTime"], fields["Nodes"], fields["Default"]) == (
        "01:00:00",
        "rpn57e2a177",
        "YES",
    )


# --- what is submitted -----------------------------------------------------------------
def test_a_gpu_job_is_submitted_with_its_gres_memory_cpus_and_time_rounded_up(spec, settings):
    settings.ROCPATH_SLURM_PARTITION = "mi300x"
    settings.ROCPATH_DEPLOYMENT = "prod"
    settings.ROCPATH_SLURM_SBATCH_ARGS = ["--account=gpu"]
    gpu = JobSpec(**{**spec.__dict__, "hardware": {"gpu_count": 2, "memory_mb": 1024, "cpus": 1.5}})
    folder = spec.job_dir
    assert sbatch_argv(gpu) == [
        "sbatch",
        "--parsable",
        "--job-name=rocpath-prod-job-42-a1",
        f"--chdir={folder}",
        f"--output={folder}/slurm-stdout.log",
        f"--error={folder}/slurm-stderr.log",
        "--no-requeue",
        "--nodes=1",
        "--ntasks=1",
        "--export=ALL",
        "--mem=1024M",
        "--cpus-per-task=2",
        "--time=2",
        "--gres=gpu:2",
        "--partition=mi300x",
        "--account=gpu",
        f"{folder}/slurm-job.sh",
    ]


def test_a_job_over_this_workers_caps_or_naming_host_gpus_is_refused(spec, settings):
    settings.ROCPATH_SLURM_MAX_MEMORY_MB = 1000
    over = JobSpec(**{**spec.__dict__, "hardware": {"memory_mb": 2000, "gpu_indices": [1]}})
    with pytest.raises(ExecutorError) as refused:
        sbatch_argv(over)
    assert refused.value.permanent
    assert "ROCPATH_SLURM_MAX_MEMORY_MB" in str(refused.value)
    assert "ask for gpu_count instead" in str(refused.value)


def test_names_carry_the_deployment_and_sweeps_only_read_their_own(spec, settings):
    settings.ROCPATH_DEPLOYMENT = "a"
    assert slurm_job_name(spec) == "rocpath-a-job-42-a1"
    assert parse_job_name("rocpath-a-job-42-a3") == (42, 3)
    assert parse_job_name("rocpath-a-job-job-42-a1") is None  # deployment "a-job"'s
    assert parse_job_name("rocpath-b-job-42-a1") is None
    assert parse_job_name("someone-elses-job") is None


def test_the_batch_script_runs_the_runner_in_the_local_sandbox_without_worker_secrets(
    spec, settings, monkeypatch
):
    monkeypatch.setenv("SECRET_KEY", "not-for-jobs")
    monkeypatch.setattr("jobs.executors.local.LocalExecutor.sandboxed", lambda self, spec: True)
    script = batch_script(spec)
    assert script.startswith("#!/bin/sh\n")
    assert "SECRET_KEY" not in script and "DATABASE_URL" not in script
    assert "export ROCPATH_JOB_ID=42\n" in script and "export HOME=/tmp\n" in script
    exec_line = script.splitlines()[-1]
    assert exec_line.startswith("exec prlimit --nproc=")
    assert " -- /usr/bin/bwrap --die-with-parent " in exec_line or " -- bwrap " in exec_line
    assert exec_line.endswith(
        f"-m stack run noop --params {spec.params_file} --out {spec.out_dir} --work {spec.work_dir}"
        " 9<seccomp.bpf"  # the job folder's seccomp filter, on bwrap's --seccomp 9
    )
    assert " --seccomp 9 " in exec_line


def test_a_kind_that_runs_a_teams_code_is_refused_where_no_sandbox_starts(spec, settings):
    settings.ROCPATH_LOCAL_SANDBOX = "off"
    settings.ROCPATH_LOCAL_UNSANDBOXED = False
    source_kind = JobSpec(**{**spec.__dict__, "kind": "compile-check"})
    with pytest.raises(ExecutorError, match="cannot sandbox them"):
        batch_script(source_kind)
    settings.ROCPATH_LOCAL_UNSANDBOXED = True  # the operator's opt-in: plain, unsandboxed
    exec_line = batch_script(source_kind).splitlines()[-1]
    assert exec_line.startswith(f"exec {sys.executable} -m stack run compile-check ")


def test_apptainer_runs_the_job_contained_with_only_its_mounts(spec, settings):
    settings.ROCPATH_SLURM_CONTAINER = "apptainer"
    gpu = JobSpec(**{**spec.__dict__, "hardware": {"gpu_count": 1, "gpu_vendor": "amd"}})
    folder = spec.job_dir
    assert apptainer_argv(gpu) == [
        "apptainer",
        "exec",
        "--containall",
        "--no-home",
        "--cleanenv",
        "--writable-tmpfs",
        "--net",
        "--network",
        "none",
        "--bind",
        f"{folder}/params.json:/job/params.json:ro",
        "--bind",
        f"{folder}/out:/job/out:rw",
        "--pwd",
        "/job",
        "--env",
        "ROCPATH_JOB_ID=42,HOME=/tmp",
        "--rocm",
        "docker://rocpath/debian:1",
        "python3",
        "-m",
        "stack",
        "run",
        "noop",
        "--params",
        "/job/params.json",
        "--out",
        "/job/out",
        "--work",
        "/job/work",
    ]
    assert batch_script(gpu).splitlines()[-1].startswith("exec apptainer exec --containall ")


def test_enroot_runs_the_job_through_pyxis_with_only_its_mounts(spec, settings):
    settings.ROCPATH_SLURM_CONTAINER = "enroot"
    settings.ROCPATH_SLURM_IMAGE = "/shared/images/rocpath-debian.sqsh"
    folder = spec.job_dir
    assert enroot_argv(spec) == [
        "srun",
        "--ntasks=1",
        "--container-image=/shared/images/rocpath-debian.sqsh",
        f"--container-mounts={folder}/params.json:/job/params.json:ro,{folder}/out:/job/out:rw",
        "--container-workdir=/job",
        "--no-container-mount-home",
        "--no-container-remap-root",
        "python3",
        "-m",
        "stack",
        "run",
        "noop",
        "--params",
        "/job/params.json",
        "--out",
        "/job/out",
        "--work",
        "/job/work",
    ]


# --- how a job's end is told -------------------------------------------------------------
def test_causes_slurm_gave_are_named_and_our_own_stops_are_not_blamed_on_it():
    cancelled = SlurmState("CANCELLED", exit_code=143, signal=0)
    assert lost_cause("7", cancelled, stopped=True, timed_out=False) == ""
    assert lost_cause("7", cancelled, stopped=False, timed_out=False) == (
        "the Slurm job 7 was cancelled outside rocpath (scancel)"
    )
    timeout = SlurmState("TIMEOUT", nodes="n1")
    assert lost_cause("7", timeout, stopped=True, timed_out=True) == ""
    assert lost_cause("7", timeout, stopped=False, timed_out=False) == (
        "the Slurm job 7 ended TIMEOUT on n1: Slurm ended it at its time limit"
    )
    oom = SlurmState("OUT_OF_MEMORY", reason="OutOfMemory", nodes="n1")
    assert "Slurm killed it for going over its memory (--mem) (OutOfMemory)" in lost_cause(
        "7", oom, stopped=False, timed_out=False
    )
    assert lost_cause("7", None, stopped=False, timed_out=False).startswith(
        "the Slurm job 7 vanished: neither squeue, scontrol nor sacct knows it"
    )
    assert lost_cause("7", SlurmState("FAILED", exit_code=1), stopped=False, timed_out=False) == ""


def ended_run(spec: JobSpec, state: SlurmState | None, *, stopped: bool = False) -> Outcome:
    run = SlurmRun("9", spec)
    run.ended, run.gone, run.stopped = state, state is None, stopped
    outcome = Outcome()
    run.wait(outcome)
    return outcome


def test_an_exit_code_a_b_becomes_the_runners_exit_or_the_signal_that_killed_it(spec):
    assert ended_run(spec, SlurmState("FAILED", exit_code=3, signal=0)).exit_code == 3
    killed = ended_run(spec, SlurmState("FAILED", exit_code=0, signal=9))
    assert (killed.signal, killed.lost) == (9, "")
    assert (
        ended_run(spec, SlurmState("CANCELLED", exit_code=0, signal=15), stopped=True).signal
        is None
    )


def test_a_vanished_job_that_left_its_result_is_read_as_any_other(spec):
    assert ended_run(spec, None).lost.startswith("the Slurm job 9 vanished")
    spec.out_dir.mkdir()
    (spec.out_dir / "result.json").write_text(json.dumps({}))
    assert ended_run(spec, None).lost == ""


@pytest.mark.django_db(transaction=True)
def test_a_job_its_scheduler_lost_ends_errored_with_the_cause_and_nothing_it_left_read(team):
    job = make_job(team, kind="noop", status=JobStatus.RUNNING, worker="w@h")
    spec = JobSpec(job_id=job.pk, kind="noop", job_dir=services.job_dir(job.pk), timeout_s=60)
    spec.out_dir.mkdir(parents=True)
    (spec.out_dir / "left.txt").write_text("not an artifact of a lost job")
    cause = "the Slurm job 5 ended NODE_FAIL on n1: its node failed (NodeDown)"
    assert services.conclude(job, spec, Outcome(lost=cause)) == "errored: lost by its scheduler"
    job.refresh_from_db()
    assert (job.status, job.error) == (JobStatus.ERRORED, cause)
    assert not job.artifacts.exists()


def test_a_job_asking_only_for_a_gpu_property_gets_one_gpu_from_slurm(spec):
    for hardware in ({"gpu_arch": "gfx942"}, {"gpu_model": "MI300X", "gpu_memory_gb": 100}):
        gpu = JobSpec(**{**spec.__dict__, "hardware": hardware})
        assert "--gres=gpu:1" in sbatch_argv(gpu), hardware
    cpu = JobSpec(**{**spec.__dict__, "hardware": {"memory_mb": 1024}})
    assert not any(option.startswith("--gres") for option in sbatch_argv(cpu))


def test_a_team_code_kind_is_refused_in_an_enroot_container_which_shares_the_nodes_network(
    spec, settings
):
    settings.ROCPATH_SLURM_CONTAINER = "enroot"
    settings.ROCPATH_LOCAL_UNSANDBOXED = False
    scan = JobSpec(**{**spec.__dict__, "kind": "hipify-scan"})
    with pytest.raises(ExecutorError, match="shares the node's network"):
        batch_script(scan)
    settings.ROCPATH_LOCAL_UNSANDBOXED = True  # an operator's choice, for code it trusts
    assert "srun" in batch_script(scan)


def test_the_poll_slows_as_a_job_runs_between_its_fastest_and_slowest(settings):
    settings.ROCPATH_SLURM_POLL_S, settings.ROCPATH_SLURM_POLL_MAX_S = 0.25, 5.0
    assert poll_interval(0) == poll_interval(5) == 0.25  # a short job's end seen at once
    assert poll_interval(40) == 2.0
    assert poll_interval(3600) == 5.0  # a long job asks the controller little


def test_a_job_that_scancel_does_not_end_is_given_up_as_lost(spec, settings, monkeypatch):
    """A hung node holds a job COMPLETING: the follow loop must end all the same."""
    settings.ROCPATH_SLURM_STOP_GRACE_S = 5
    sent = []
    monkeypatch.setattr(slurm, "scancel", lambda *ids, **kw: sent.append((ids, kw)) or True)
    monkeypatch.setattr(slurm, "current_state", lambda *_: SlurmState("COMPLETING", "", "n1"))
    run = slurm.SlurmRun("77", spec)
    run.stop()
    run.stopped_at -= 6  # the grace has passed
    run._poll(time.monotonic())
    run._check_stop(time.monotonic())
    assert run.gone and sent == [(("77",), {"name": slurm_job_name(spec)})]
    outcome = Outcome(canceled=True)
    run.wait(outcome)
    assert outcome.lost.startswith("the Slurm job 77 did not end within 5 s of scancel")


def test_an_earlier_attempt_still_listed_is_cancelled_and_waited_for(spec, settings, monkeypatch):
    listings = [{"91": (42, 1)}, {"91": (42, 1)}, {}]
    monkeypatch.setattr(slurm, "listed_jobs", lambda: listings.pop(0) if listings else {})
    cancelled = []
    monkeypatch.setattr(slurm, "scancel", lambda *ids, **kw: cancelled.append(ids) or True)
    settings.ROCPATH_SLURM_POLL_S = 0.01
    slurm.earlier_attempts_ended(spec)
    assert cancelled == [("91",)] and listings == []


def test_an_earlier_attempt_that_will_not_end_is_an_error_that_may_pass(
    spec, settings, monkeypatch
):
    monkeypatch.setattr(slurm, "listed_jobs", lambda: {"91": (42, 1)})
    monkeypatch.setattr(slurm, "scancel", lambda *ids, **kw: True)
    settings.ROCPATH_SLURM_POLL_S, settings.ROCPATH_SLURM_STOP_GRACE_S = 0.01, 1
    ticks = iter([0.0, 0.5, 2.0])
    with pytest.raises(ExecutorError, match="did not end within 1 s") as refused:
        slurm.earlier_attempts_ended(spec, clock=lambda: next(ticks))
    assert not refused.value.permanent


def test_the_sweep_lists_only_this_users_jobs(monkeypatch):
    seen = []

    def answer(argv, env=None):
        seen.append(argv)
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(slurm, "client", answer)
    slurm.listed_jobs()
    assert seen[0][:2] == ["squeue", "--me"]


def test_a_slurm_id_reused_by_another_job_is_not_read_as_ours(monkeypatch):
    """A cluster restarted without its state gives our id to another job: squeue and
    scancel are held to our job's name, and scontrol's answer for another name is not ours."""
    seen = []
    other = captured("scontrol-running.txt").replace("JobName=rocpath-x-job-1-a1", "JobName=x")

    def answer(argv, env=None):
        seen.append(argv)
        if argv[0] == "scontrol":
            return subprocess.CompletedProcess(argv, 0, other, "")
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(slurm, "client", answer)
    monkeypatch.setattr(slurm, "accounting_on", lambda: True)
    assert slurm.current_state("1", "rocpath-x-job-1-a1") is None
    assert slurm.final_state("1", "rocpath-x-job-1-a1") is None
    assert slurm.scancel("1", name="rocpath-x-job-1-a1")
    squeue, _, _, scancel = seen  # sacct is asked by id: its --name filter hid our job
    for argv in (squeue, scancel):
        assert "--name=rocpath-x-job-1-a1" in argv, argv
    assert slurm.final_state("1", "") is not None  # without a name: what scontrol says
