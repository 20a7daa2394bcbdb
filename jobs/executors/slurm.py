"""Run the stack runner as a Slurm batch job: sbatch, squeue / sacct / scontrol, scancel.

The job contract is the other engines': the runner is ``python -m stack run KIND --params
... --out OUT`` and leaves OUT/result.json, which the worker reads as for every engine
(jobs.services.ingest). What differs is where it runs: on a node Slurm picks, so the job's
folder must be on a file system the worker and the nodes share (ARTIFACT_ROOT, at the same
path everywhere), and so must the stack code and its interpreter (BASE_DIR,
ROCPATH_STACK_PYTHON) in the plain environment.

The steps: a batch script written into the job's folder (``batch_script``: the runner,
wrapped in the local executor's bubblewrap sandbox, an Apptainer container or a pyxis/enroot
container, ROCPATH_SLURM_CONTAINER), submitted with ``sbatch --parsable`` under a name that
carries the deployment and the job (``slurm_job_name``: sweeps never touch another
deployment's jobs), its output files tailed into the job's events while its state is polled
with squeue every ROCPATH_SLURM_POLL_S, and its end read from sacct where accounting answers,
else from ``scontrol show job``. Cancel and timeout are scancel. A Slurm job that ends for a
reason of Slurm's own (NODE_FAIL, TIMEOUT, OUT_OF_MEMORY, PREEMPTED, a cancel from outside
rocpath) or vanishes ends the rocpath job errored with that cause (Outcome.lost).

Slurm allocates GPUs itself (``--gres=gpu:N``): the worker's own GPU lease is skipped for
this engine (Executor.allocates_gpus).

Over 400 lines: one engine's parts that share its client calls and parsers: the
submission (script, sbatch arguments), the follow (SlurmRun), the end (final_state,
lost_cause), what a Slurm worker announces (partition_inventory) and the sweep of what a
lost worker left (listed_jobs, cancel_jobs).
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import re
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass, replace
from pathlib import Path

from django.conf import settings

from jobs.executors.base import ExecutionHooks, ExecutorError, JobSpec, Outcome, Started, log
from jobs.executors.gpu_profiles import gpus_needed
from jobs.executors.local import LocalExecutor
from jobs.executors.sandbox import bwrap_argv, layout_for, limits_for, tools
from stack import seccomp
from stack.kinds import KINDS

# Slurm job states after which nothing more happens to the job (squeue's %T names).
ENDED = frozenset(
    {
        "COMPLETED",
        "FAILED",
        "CANCELLED",
        "TIMEOUT",
        "NODE_FAIL",
        "PREEMPTED",
        "BOOT_FAIL",
        "DEADLINE",
        "OUT_OF_MEMORY",
        "SPECIAL_EXIT",
        "REVOKED",
    }
)
# States in which Slurm, not the runner, ended the job: the rocpath job ends errored, saying so.
SLURM_CAUSES = {
    "NODE_FAIL": "its node failed",
    "TIMEOUT": "Slurm ended it at its time limit",
    "OUT_OF_MEMORY": "Slurm killed it for going over its memory (--mem)",
    "PREEMPTED": "Slurm preempted it",
    "BOOT_FAIL": "its node failed to boot",
    "DEADLINE": "it passed its deadline",
    "SPECIAL_EXIT": "Slurm held it (SPECIAL_EXIT)",
    "REVOKED": "Slurm revoked it (federation)",
}
# What Slurm clients say when the controller does not answer: worth another try later.
UNREACHABLE = (
    "Unable to contact slurm controller",
    "Socket timed out",
    "Zero Bytes were transmitted",
    "Connection refused",
    "Communication connection failure",
    "Slurm backup controller in standby mode",
    "slurm_load_jobs error: Unexpected message",
)
INVALID_JOB = "Invalid job id specified"
CLIENT_TIMEOUT_S = 30
STDOUT_NAME = "slurm-stdout.log"
STDERR_NAME = "slurm-stderr.log"
SCRIPT_NAME = "slurm-job.sh"
READ_CHUNK = 1024 * 1024


@dataclass(frozen=True)
class SlurmState:
    """One look at a Slurm job: its state and reason, and once it ended its exit code."""

    state: str
    reason: str = ""
    nodes: str = ""
    exit_code: int | None = None
    signal: int | None = None
    cancelled_by: str = ""  # sacct's "CANCELLED by <uid>"


# --- client calls --------------------------------------------------------------------------
def client(argv: list[str], *, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """A Slurm client command; ExecutorError(permanent=False) when it cannot be run in time."""
    try:
        return subprocess.run(
            argv,
            capture_output=True,
            text=True,
            env=env,
            timeout=CLIENT_TIMEOUT_S,
            check=False,
        )
    except FileNotFoundError:
        raise ExecutorError(
            f"{argv[0]} is not installed on this worker: the slurm executor needs the Slurm "
            "clients (Debian: slurm-client) and the cluster's slurm.conf (SLURM_CONF)"
        ) from None
    except subprocess.TimeoutExpired:
        raise ExecutorError(
            f"{argv[0]} did not answer within {CLIENT_TIMEOUT_S} s: is slurmctld up?",
            permanent=False,
        ) from None


def unreachable(text: str) -> bool:
    return any(marker in text for marker in UNREACHABLE)


def client_env() -> dict[str, str]:
    """What a Slurm client needs of the worker's environment, nothing of its secrets."""
    keep = ("PATH", "SLURM_CONF", "LANG", "LC_ALL", "TZ")
    return {key: os.environ[key] for key in keep if key in os.environ}


# --- parsing ---------------------------------------------------------------------------------
def parse_exit(text: str) -> tuple[int | None, int | None]:
    """Slurm's ExitCode "a:b": the exit status and the signal that ended it (0: none)."""
    match = re.fullmatch(r"\s*(\d+):(\d+)\s*", text or "")
    if not match:
        return None, None
    return int(match.group(1)), int(match.group(2))


def parse_fields(line: str) -> dict[str, str]:
    """``scontrol show ... -o``'s Key=value pairs (values that hold spaces are cut: none
    of the ones read here do)."""
    return dict(re.findall(r"(?:^|\s)([A-Za-z/:_]+)=(\S*)", line))


def parse_scontrol_job(text: str) -> SlurmState | None:
    """``scontrol show job -o ID``'s one line as a SlurmState; None when it names no job."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    fields = parse_fields(line)
    if "JobState" not in fields:
        return None
    code, sig = parse_exit(fields.get("ExitCode", ""))
    return SlurmState(
        state=fields["JobState"],
        reason=fields.get("Reason", "").replace("_", " ") if fields.get("Reason") != "None" else "",
        nodes=fields.get("NodeList", "") if fields.get("NodeList") != "(null)" else "",
        exit_code=code,
        signal=sig,
    )


SQUEUE_FORMAT = "%T|%r|%N"


def parse_squeue(text: str) -> SlurmState | None:
    """``squeue -h -t all -j ID -o '%T|%r|%N'``'s line; None when it lists nothing."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    if not line:
        return None
    state, _, rest = line.partition("|")
    reason, _, nodes = rest.partition("|")
    return SlurmState(state=state, reason="" if reason == "None" else reason, nodes=nodes)


SACCT_FIELDS = "State,ExitCode,Reason,NodeList"
# How long an end squeue shows may wait for slurmdbd's record before scontrol's is read.
ACCOUNTING_LAG_S = 5.0


def parse_sacct(text: str) -> SlurmState | None:
    """``sacct -n -P -X -j ID -o State,ExitCode,Reason,NodeList``'s line (the allocation's)."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return None
    parts = [*lines[-1].split("|"), "", "", ""][:4]
    state, exit_text, reason, nodes = parts
    cancelled_by = ""
    if state.startswith("CANCELLED by "):
        state, cancelled_by = "CANCELLED", state.removeprefix("CANCELLED by ").strip()
    code, sig = parse_exit(exit_text)
    return SlurmState(
        state=state.split()[0] if state else "",
        reason="" if reason == "None" else reason,
        nodes="" if nodes == "None assigned" else nodes,
        exit_code=code,
        signal=sig,
        cancelled_by=cancelled_by,
    )


def parse_duration_s(text: str) -> int | None:
    """Slurm's time limit ([D-]HH:MM:SS, MM:SS, MM) in seconds; None for UNLIMITED / NONE."""
    text = (text or "").strip()
    if not text or text.upper() in ("UNLIMITED", "NONE", "INFINITE", "N/A"):
        return None
    days, _, clock = text.rpartition("-")
    parts = [int(p) for p in clock.split(":")]
    if len(parts) == 1:
        hours, minutes, seconds = 0, parts[0], 0
    elif len(parts) == 2:
        hours, (minutes, seconds) = 0, parts
    else:
        hours, minutes, seconds = parts[-3:]
    return ((int(days) if days else 0) * 24 + hours) * 3600 + minutes * 60 + seconds


def gres_gpus(gres: str) -> tuple[int, str]:
    """GPUs a node's Gres lists ("gpu:2", "gpu:mi300x:8(S:0-1)"): (count, type or '')."""
    total, kind = 0, ""
    for match in re.finditer(r"(?:^|,)gpu(?::([A-Za-z0-9_.-]+))?:(\d+)", gres or ""):
        total += int(match.group(2))
        kind = kind or (match.group(1) or "")
    return total, kind


# --- what the job asks of Slurm ------------------------------------------------------------
def slurm_job_name(spec: JobSpec) -> str:
    """Unique between deployments (job ids repeat between them) and between attempts."""
    return f"{name_prefix()}{spec.job_id}-a{spec.attempt}"


def name_prefix() -> str:
    return f"rocpath-{settings.ROCPATH_DEPLOYMENT}-job-"


def parse_job_name(name: str) -> tuple[int, int] | None:
    """(job id, attempt) of one of this deployment's Slurm jobs; None for anyone else's."""
    prefix = name_prefix()
    if not name.startswith(prefix):
        return None
    match = re.fullmatch(r"(\d+)-a(\d+)", name[len(prefix) :])
    return (int(match.group(1)), int(match.group(2))) if match else None


def resources(spec: JobSpec) -> list[str]:
    """sbatch's resource options: memory, CPUs, GPUs and time limit from the job.

    A job asking more than this worker's caps (ROCPATH_SLURM_MAX_*, where set) is refused
    rather than given less, as by the docker executor; what the partition cannot give at
    all, sbatch refuses itself, with its own message.
    """
    hardware = spec.hardware
    memory = int(hardware.get("memory_mb") or settings.ROCPATH_SLURM_MEMORY_MB)
    cpus = math.ceil(float(hardware.get("cpus") or settings.ROCPATH_SLURM_CPUS))
    over = []
    if settings.ROCPATH_SLURM_MAX_MEMORY_MB and memory > settings.ROCPATH_SLURM_MAX_MEMORY_MB:
        over.append(
            f"hardware.memory_mb: the job asks for {memory} MiB, this worker's cap is "
            f"{settings.ROCPATH_SLURM_MAX_MEMORY_MB} MiB (ROCPATH_SLURM_MAX_MEMORY_MB)"
        )
    if settings.ROCPATH_SLURM_MAX_CPUS and cpus > settings.ROCPATH_SLURM_MAX_CPUS:
        over.append(
            f"hardware.cpus: the job asks for {cpus} CPUs, this worker's cap is "
            f"{settings.ROCPATH_SLURM_MAX_CPUS} (ROCPATH_SLURM_MAX_CPUS)"
        )
    if hardware.get("gpu_indices"):
        over.append(
            "hardware.gpu_indices names one host's GPUs; under Slurm the scheduler picks the "
            "GPUs: ask for gpu_count instead"
        )
    vendor = hardware.get("gpu_vendor")
    gpu = configured_gpu()
    if vendor and gpu and gpu["vendor"] and vendor != gpu["vendor"]:
        over.append(
            f"hardware.gpu_vendor: the job asks for {vendor} GPUs, this partition has "
            f"{gpu['vendor']} ones (ROCPATH_SLURM_GPU)"
        )
    if over:
        raise ExecutorError("; ".join(over))
    options = [
        f"--mem={memory}M",
        f"--cpus-per-task={cpus}",
        f"--time={max(1, math.ceil(spec.timeout_s / 60))}",
    ]
    count = gpus_needed(hardware)
    if count:
        options.append(f"--gres=gpu:{count}")
    return options


def sbatch_argv(spec: JobSpec) -> list[str]:
    """The exact sbatch command line that submits a job's batch script."""
    argv = [
        "sbatch",
        "--parsable",
        f"--job-name={slurm_job_name(spec)}",
        f"--chdir={spec.job_dir}",
        f"--output={spec.job_dir / STDOUT_NAME}",
        f"--error={spec.job_dir / STDERR_NAME}",
        "--no-requeue",  # a failed node ends the job (NODE_FAIL), never a silent second run
        "--nodes=1",
        "--ntasks=1",
        "--export=ALL",  # the client environment sbatch is given: no worker secrets in it
        *resources(spec),
    ]
    if settings.ROCPATH_SLURM_PARTITION:
        argv.append(f"--partition={settings.ROCPATH_SLURM_PARTITION}")
    argv += settings.ROCPATH_SLURM_SBATCH_ARGS
    argv.append(str(spec.job_dir / SCRIPT_NAME))
    return argv


# --- the batch script ----------------------------------------------------------------------
def runner_argv(spec: JobSpec) -> list[str]:
    """What the batch script executes: the runner, in its sandbox or container."""
    runtime = settings.ROCPATH_SLURM_CONTAINER
    if runtime == "apptainer":
        return apptainer_argv(spec)
    if runtime == "enroot":
        kind = KINDS.get(spec.kind)
        if kind is not None and kind.takes_source and not settings.ROCPATH_LOCAL_UNSANDBOXED:
            # pyxis/enroot containers share the node's network: a team's code would have it
            raise ExecutorError(
                f"{spec.kind} jobs run a team's code, and an enroot (pyxis) container shares "
                "the node's network; use ROCPATH_SLURM_CONTAINER=apptainer (network none) or "
                "the plain environment (bubblewrap), or let an operator allow it with "
                "ROCPATH_LOCAL_UNSANDBOXED=1"
            )
        return enroot_argv(spec)
    local = LocalExecutor()
    command = local.command(spec)
    if not local.sandboxed(spec):  # refuses a kind that runs a team's code, unless allowed
        return command
    bwrap, setpriv = tools()
    layout = layout_for(_gpu_spec(spec), command[0], Path(settings.BASE_DIR))
    limits = limits_for(spec)
    prlimit = [
        "prlimit",
        f"--nproc={limits.processes}",
        f"--fsize={limits.file_size}",
        f"--cpu={limits.cpu_seconds}",
    ]
    if limits.address_space:
        prlimit.append(f"--as={limits.address_space}")
    sandbox = bwrap_argv(str(bwrap), str(setpriv), layout, command, seccomp_fd=SECCOMP_FD)
    return [*prlimit, "--", *sandbox]


# The batch script opens the job folder's compiled seccomp filter (stack.seccomp, written
# by prepare) on this descriptor for bwrap's --seccomp: the node needs no libseccomp of
# its own, and the filter is the worker's, as for a local job.
SECCOMP_FD = 9
SECCOMP_FILE = "seccomp.bpf"
_OPEN_FILTER = f" {SECCOMP_FD}<{SECCOMP_FILE}"  # the batch script's redirection


def _gpu_spec(spec: JobSpec) -> JobSpec:
    """The spec as the sandbox layout reads it: a GPU job gets its vendor's device nodes
    (which of them it may use, Slurm says in CUDA/ROCR_VISIBLE_DEVICES)."""
    count = gpus_needed(spec.hardware)
    if not count:
        return spec
    vendor = spec.hardware.get("gpu_vendor") or (configured_gpu() or {}).get("vendor", "")
    return replace(
        spec, hardware={**spec.hardware, "gpu_vendor": vendor, "gpu_indices": list(range(count))}
    )


IN_CONTAINER = ["python3", "-m", "stack", "run"]


def _container_command(spec: JobSpec) -> list[str]:
    return [
        *IN_CONTAINER,
        spec.kind,
        "--params",
        "/job/params.json",
        "--out",
        "/job/out",
        "--work",
        "/job/work",
    ]


def container_image(spec: JobSpec) -> str:
    """ROCPATH_SLURM_IMAGE (a .sif file, docker://…, or what the runtime takes), else the
    job's own image as a registry reference."""
    if settings.ROCPATH_SLURM_IMAGE:
        return settings.ROCPATH_SLURM_IMAGE
    if settings.ROCPATH_SLURM_CONTAINER == "apptainer":
        return f"docker://{spec.image}"
    return spec.image


def _binds(spec: JobSpec) -> list[tuple[str, str, str]]:
    binds = [
        (str(spec.params_file), "/job/params.json", "ro"),
        (str(spec.out_dir), "/job/out", "rw"),
    ]
    for name, path in spec.inputs.items():
        binds.append((str(path), f"/job/work/{name}", "ro"))
    if spec.cache_dir is not None:
        binds.append((str(spec.cache_dir), "/job/cache", "rw"))
    return binds


def apptainer_argv(spec: JobSpec) -> list[str]:
    """apptainer exec: its own /tmp, no home, no host environment, only the job's mounts."""
    argv = ["apptainer", "exec", "--containall", "--no-home", "--cleanenv", "--writable-tmpfs"]
    argv += ["--net", "--network", "none"]  # no network, as every job container
    for source, dest, mode in _binds(spec):
        argv += ["--bind", f"{source}:{dest}:{mode}"]
    argv += ["--pwd", "/job", "--env", f"ROCPATH_JOB_ID={spec.job_id},HOME=/tmp"]
    if spec.cache_dir is not None:
        argv += ["--env", "ROCPATH_CACHE_DIR=/job/cache"]
    if gpus_needed(spec.hardware):
        vendor = spec.hardware.get("gpu_vendor") or (configured_gpu() or {}).get("vendor")
        argv.append("--nv" if vendor == "nvidia" else "--rocm")
    return [*argv, container_image(spec), *_container_command(spec)]


def enroot_argv(spec: JobSpec) -> list[str]:
    """srun with pyxis: the job's mounts only, no home, the image's root not remapped."""
    mounts = ",".join(f"{source}:{dest}:{mode}" for source, dest, mode in _binds(spec))
    return [
        "srun",
        "--ntasks=1",
        f"--container-image={container_image(spec)}",
        f"--container-mounts={mounts}",
        "--container-workdir=/job",
        "--no-container-mount-home",
        "--no-container-remap-root",
        *_container_command(spec),
    ]


def job_environment(spec: JobSpec) -> dict[str, str]:
    """The runner's environment: the local executor's (no worker secrets), the sandbox's
    when it runs in one; a container runtime is given only what it passes on."""
    local = LocalExecutor()
    if settings.ROCPATH_SLURM_CONTAINER:
        return {"ROCPATH_JOB_ID": str(spec.job_id), "PYTHONUNBUFFERED": "1"}
    if runner_argv(spec)[0] == "prlimit":
        return local.sandbox_environment(spec)
    return local.environment(spec)


def batch_script(spec: JobSpec) -> str:
    """The batch script: the environment, then exec of the runner (so that scancel's
    SIGTERM reaches it and it can still write its result)."""
    lines = [
        "#!/bin/sh",
        f"# rocpath job {spec.job_id}, attempt {spec.attempt}, deployment "
        f"{settings.ROCPATH_DEPLOYMENT} (written by jobs/executors/slurm.py)",
    ]
    for key, value in sorted(job_environment(spec).items()):
        lines.append(f"export {key}={shlex.quote(value)}")
    lines.append(f"cd {shlex.quote(str(spec.job_dir))}")
    argv = runner_argv(spec)
    opened = _OPEN_FILTER if "--seccomp" in argv else ""
    lines.append("exec " + shlex.join(argv) + opened)
    return "\n".join(lines) + "\n"


# --- the engine ----------------------------------------------------------------------------
class SlurmExecutor(LocalExecutor):
    """The local executor's preparation (folders, inputs, the sandbox's uid owning out/),
    a Slurm batch job instead of a local process."""

    name = "slurm"
    allocates_gpus = True

    def prepare(self, spec: JobSpec) -> None:
        # An earlier attempt whose end was never seen (the controller stopped answering,
        # sbatch timed out after the controller took the job) may still run and write into
        # this folder: it is cancelled, and waited for, before this attempt starts.
        earlier_attempts_ended(spec)
        if spec.out_dir.exists():
            shutil.rmtree(spec.out_dir)
        if settings.ROCPATH_SLURM_CONTAINER:
            super(LocalExecutor, self).prepare(spec)  # a container mounts the inputs itself
        else:
            super().prepare(spec)
        script = spec.job_dir / SCRIPT_NAME
        text = batch_script(spec)
        if _OPEN_FILTER in text:  # a sandboxed runner: its filter goes in the job folder
            try:
                (spec.job_dir / SECCOMP_FILE).write_bytes(seccomp.bpf())
            except seccomp.SeccompError as exc:
                raise ExecutorError(f"could not build the sandbox's seccomp filter: {exc}") from exc
        script.write_text(text)
        script.chmod(0o700)

    def start(self, spec: JobSpec, hooks: ExecutionHooks) -> SlurmRun:
        slurm_id = submit(spec)
        log(
            hooks,
            f"Slurm job {slurm_id} submitted as {slurm_job_name(spec)}"
            + (
                f" to partition {settings.ROCPATH_SLURM_PARTITION}"
                if settings.ROCPATH_SLURM_PARTITION
                else ""
            ),
        )
        return SlurmRun(slurm_id, spec)


def earlier_attempts_ended(spec: JobSpec, *, clock=time.monotonic) -> None:
    """scancel this job's Slurm jobs still listed (earlier attempts) and wait until none is;
    ExecutorError (may pass) when they outlive ROCPATH_SLURM_STOP_GRACE_S."""
    doomed = cancel_jobs(jobs={spec.job_id})
    if not doomed:
        return
    deadline = clock() + settings.ROCPATH_SLURM_STOP_GRACE_S
    while set(listed_jobs()) & set(doomed):
        if clock() > deadline:
            raise ExecutorError(
                f"earlier attempts of this job (Slurm jobs {', '.join(doomed)}) did not end "
                f"within {settings.ROCPATH_SLURM_STOP_GRACE_S} s of scancel",
                permanent=False,
            )
        time.sleep(settings.ROCPATH_SLURM_POLL_S)


def submit(spec: JobSpec) -> str:
    """sbatch the job's script; its Slurm job id, or an ExecutorError with sbatch's words."""
    done = client(sbatch_argv(spec), env=client_env())
    if done.returncode != 0:
        message = (done.stderr or done.stdout).strip() or f"exit status {done.returncode}"
        raise ExecutorError(
            f"sbatch refused the job: {message}", permanent=not unreachable(message)
        )
    slurm_id = done.stdout.strip().split(";")[0]
    if not slurm_id.isdigit():
        raise ExecutorError(f"sbatch answered no job id: {done.stdout.strip()!r}")
    return slurm_id


@functools.lru_cache(maxsize=4)
def accounting(conf: str) -> bool:
    """Whether sacct answers on this cluster (slurmdbd): checked once per process."""
    try:
        done = client(["sacct", "-n", "-P", "-X", "-j", "1", "-o", "State"], env=client_env())
    except ExecutorError:
        return False
    return done.returncode == 0 and not accounting_disabled(done.stdout + done.stderr)


def accounting_disabled(text: str) -> bool:
    """What sacct answers on a cluster without slurmdbd (exit status 0 all the same)."""
    return "accounting storage is disabled" in text


def accounting_on() -> bool:
    return accounting(os.environ.get("SLURM_CONF", ""))


def named(name: str) -> list[str]:
    """The filter that holds a client to the job of that name: Slurm ids are reused by a
    cluster restarted without its state, and another user's job must never be followed
    or cancelled for ours (squeue, sacct and scancel take it)."""
    return [f"--name={name}"] if name else []


def current_state(slurm_id: str, name: str = "") -> SlurmState | None:
    """squeue's look at a job (it lists ended jobs within MinJobAge); None: unknown to it
    (or, with ``name``, that id is now another job's).

    ExecutorError(permanent=False) when the controller does not answer.
    """
    done = client(["squeue", "-h", "-t", "all", "-j", slurm_id, *named(name), "-o", SQUEUE_FORMAT])
    if done.returncode != 0:
        text = (done.stderr or done.stdout).strip()
        if INVALID_JOB in text:
            return None
        raise ExecutorError(f"squeue failed: {text}", permanent=not unreachable(text))
    return parse_squeue(done.stdout)


def final_state(
    slurm_id: str, name: str = "", *, wait_for_accounting: bool = False
) -> SlurmState | None:
    """How an ended job ended, exit code included: sacct where accounting answers (slurmdbd
    keeps the job after slurmctld purged it, MinJobAge), else scontrol (which knows a job
    for MinJobAge after its end); None when neither knows it.

    slurmctld sends a job's end to slurmdbd a moment after squeue shows it: a sacct record
    not ended yet is passed over for scontrol's, and returned as it is when scontrol no
    longer knows the job (the caller looks again, SlurmRun._poll).
    """
    recorded = None
    if accounting_on():
        done = client(
            ["sacct", "-n", "-P", "-X", "-j", slurm_id, "-o", SACCT_FIELDS],
            env=client_env(),
        )
        if done.returncode == 0:
            recorded = parse_sacct(done.stdout)
            if recorded is not None and recorded.state in ENDED:
                return recorded
            if recorded is not None and wait_for_accounting:
                return recorded  # not ended there yet: the caller looks again
    done = client(["scontrol", "show", "job", "-o", slurm_id])
    if done.returncode != 0:
        text = (done.stderr or done.stdout).strip()
        if INVALID_JOB in text:
            return recorded
        raise ExecutorError(f"scontrol failed: {text}", permanent=not unreachable(text))
    if name and parse_fields(done.stdout.strip()).get("JobName", name) != name:
        return recorded  # that id is another job's now (scontrol takes no name filter)
    return parse_scontrol_job(done.stdout) or recorded


def node_reason(nodes: str) -> str:
    """Why Slurm set a node down/drained, as its admin or slurmctld wrote it ('' if none)."""
    if not nodes:
        return ""
    with contextlib.suppress(ExecutorError):
        return parse_node_reason(client(["scontrol", "show", "node", "-o", nodes]).stdout)
    return ""


def parse_node_reason(text: str) -> str:
    """The Reason of ``scontrol show node -o``'s line (it runs to the end or the next key)."""
    match = re.search(r"\bReason=(.*?)(?:\s+\w+=|$)", text.strip())
    return "" if not match or match.group(1) in ("", "(null)") else match.group(1).strip()


def scancel(*slurm_ids: str, name: str = "") -> bool:
    if not slurm_ids:
        return True
    with contextlib.suppress(ExecutorError):
        return client(["scancel", *named(name), *slurm_ids]).returncode == 0
    return False


def lost_cause(slurm_id: str, state: SlurmState | None, *, stopped: bool, timed_out: bool) -> str:
    """Why Slurm, not the runner, ended the job ('' when the runner's exit says it all)."""
    if state is None:
        return (
            f"the Slurm job {slurm_id} vanished: neither squeue, scontrol nor sacct knows it, "
            "and its runner wrote no result (purged by the controller, or the cluster restarted "
            "without its state)"
        )
    name = state.state
    if name == "CANCELLED" and not stopped:
        who = f" by uid {state.cancelled_by}" if state.cancelled_by else ""
        return f"the Slurm job {slurm_id} was cancelled outside rocpath{who} (scancel)"
    if name == "TIMEOUT" and timed_out:
        return ""
    if name in SLURM_CAUSES and not (stopped and name == "CANCELLED"):
        where = f" on {state.nodes}" if state.nodes else ""
        detail = state.reason
        if name == "NODE_FAIL":
            why = node_reason(state.nodes)
            detail = f"{detail}: {why}" if why and detail else why or detail
        return f"the Slurm job {slurm_id} ended {name}{where}: {SLURM_CAUSES[name]}" + (
            f" ({detail})" if detail else ""
        )
    return ""


class SlurmRun(Started):
    """A submitted Slurm job as the follow loop drives it: its output files tailed, its state
    polled with squeue every ROCPATH_SLURM_POLL_S until it ended, then its end read."""

    def __init__(self, slurm_id: str, spec: JobSpec) -> None:
        self.slurm_id, self.spec = slurm_id, spec
        self.name = slurm_job_name(spec)
        self.files = {"stdout": spec.job_dir / STDOUT_NAME, "stderr": spec.job_dir / STDERR_NAME}
        self.handles: dict[str, object] = {}
        self.ended: SlurmState | None = None  # the final state, once squeue said it ended
        self.gone = False  # unknown to every client: vanished
        self.finished = False  # the streams' ends were handed out
        self.stopped = False  # we scancel'ed it
        self.next_poll = 0.0
        self.unreachable_since: float | None = None
        self.started = time.monotonic()
        self.stopped_at: float | None = None
        self.abandoned = ""  # why the job was given up after scancel did not end it
        self.ended_seen_at: float | None = None  # when squeue first showed it ended

    def _read_files(self) -> list[tuple[str, bytes]]:
        chunks = []
        for stream, path in self.files.items():
            handle = self.handles.get(stream)
            if handle is None:
                try:
                    handle = self.handles[stream] = path.open("rb")
                except FileNotFoundError:
                    continue  # not written yet (the job is pending)
            data = handle.read(READ_CHUNK)  # type: ignore[attr-defined]
            if data:
                chunks.append((stream, data))
        return chunks

    def read(self, timeout: float) -> list[tuple[str, bytes]] | None:
        if self.finished:
            return None
        chunks = self._read_files()
        if chunks:
            return chunks
        if self.ended is not None or self.gone:
            self.finished = True
            for handle in self.handles.values():
                handle.close()  # type: ignore[attr-defined]
            return [("stdout", b""), ("stderr", b"")]
        now = time.monotonic()
        if now >= self.next_poll:
            self.next_poll = now + poll_interval(now - self.started)
            self._poll(now)
            self._check_stop(now)
            if self.ended is not None or self.gone:
                return self._read_files()  # what it wrote last; the next read ends the streams
        time.sleep(max(0.0, min(timeout, self.next_poll - time.monotonic())))
        return self._read_files()

    def _poll(self, now: float) -> None:
        try:
            state = current_state(self.slurm_id, self.name)
            if state is None or state.state in ENDED:
                # slurmdbd hears of the end a moment after squeue shows it, and only it
                # knows who cancelled a job: give it ACCOUNTING_LAG_S before scontrol.
                self.ended_seen_at = self.ended_seen_at or now
                ended = final_state(
                    self.slurm_id,
                    self.name,
                    wait_for_accounting=now - self.ended_seen_at < ACCOUNTING_LAG_S,
                )
                if ended is None or ended.state in ENDED:  # else: accounting lags, look again
                    self.ended, self.gone = ended, ended is None
            self.unreachable_since = None
        except ExecutorError as exc:
            if exc.permanent:
                raise
            self.unreachable_since = self.unreachable_since or now
            if now - self.unreachable_since > settings.ROCPATH_SLURM_UNREACHABLE_S:
                raise ExecutorError(
                    f"the Slurm controller did not answer for "
                    f"{settings.ROCPATH_SLURM_UNREACHABLE_S} s while Slurm job {self.slurm_id} "
                    f"ran: {exc}",
                    permanent=False,
                ) from exc

    def _check_stop(self, now: float) -> None:
        """After scancel: send it again now and then; give the job up once it outlived
        ROCPATH_SLURM_STOP_GRACE_S (a hung node: Slurm holds it COMPLETING)."""
        if self.stopped_at is None or self.ended is not None or self.gone:
            return
        if now - self.stopped_at > settings.ROCPATH_SLURM_STOP_GRACE_S:
            self.abandoned = (
                f"the Slurm job {self.slurm_id} did not end within "
                f"{settings.ROCPATH_SLURM_STOP_GRACE_S} s of scancel: given up, left to Slurm"
            )
            self.gone = True
        elif now - self.stopped_at > 10 * settings.ROCPATH_SLURM_POLL_S:
            scancel(self.slurm_id, name=self.name)

    def stop(self) -> None:
        self.stopped = True
        self.stopped_at = time.monotonic()
        self.next_poll = 0.0  # see it end at once
        scancel(self.slurm_id, name=self.name)

    def wait(self, outcome: Outcome) -> None:
        for handle in self.handles.values():
            with contextlib.suppress(Exception):
                handle.close()  # type: ignore[attr-defined]
        state = self.ended
        if self.abandoned:
            outcome.lost = self.abandoned
            return
        if state is None and not self.gone:
            return  # the loop was left early (a hook raised): stop() cancelled it
        if state is None and (self.spec.out_dir / "result.json").exists():
            return  # purged after it wrote its result: read that, no exit code known
        outcome.lost = lost_cause(
            self.slurm_id,
            state,
            stopped=self.stopped,
            timed_out=outcome.timed_out,
        )
        if state is None:
            return
        if state.signal and not self.stopped and not outcome.lost:
            outcome.signal = state.signal
        else:
            outcome.exit_code = state.exit_code


def poll_interval(running_s: float) -> float:
    """How long to wait before asking squeue again about a job that has run this long."""
    fastest, slowest = settings.ROCPATH_SLURM_POLL_S, settings.ROCPATH_SLURM_POLL_MAX_S
    return min(slowest, max(fastest, running_s / 20))


# --- what a Slurm worker announces -------------------------------------------------------
def configured_gpu() -> dict | None:
    """ROCPATH_SLURM_GPU ("vendor:model:arch:memory_mib") as an inventory GPU's fields."""
    text = settings.ROCPATH_SLURM_GPU
    if not text:
        return None
    vendor, model, arch, memory = [*text.split(":"), "", "", ""][:4]
    return {
        "vendor": vendor,
        "model": model,
        "arch": arch,
        "memory_bytes": int(memory) * 1024 * 1024 if memory.isdigit() else None,
    }


def partition_inventory() -> dict:
    """What a Slurm worker serves: its partition's nodes, as the probe's inventory shape.

    cpus / memory_mb / GPUs are per node (what one job can get at most: jobs here run on
    one node), the smallest of the partition's nodes; GPU vendor, model, arch and memory
    come from ROCPATH_SLURM_GPU, Slurm knowing only the count (and a type name).
    """
    partition = settings.ROCPATH_SLURM_PARTITION
    done = client(["scontrol", "show", "partition", "-o", *([partition] if partition else [])])
    if done.returncode != 0:
        raise ExecutorError(
            f"scontrol show partition failed: {(done.stderr or done.stdout).strip()}",
            permanent=not unreachable(done.stderr),
        )
    lines = [parse_fields(line) for line in done.stdout.splitlines() if line.strip()]
    chosen = next(
        (
            f
            for f in lines
            if (f.get("PartitionName") == partition if partition else f.get("Default") == "YES")
        ),
        None,
    )
    if chosen is None:
        raise ExecutorError(f"no Slurm partition {partition or '(default)'} on this cluster")
    name = chosen["PartitionName"]
    nodes_done = client(["scontrol", "show", "node", "-o"])
    nodes = [
        parse_fields(line)
        for line in nodes_done.stdout.splitlines()
        if name in parse_fields(line).get("Partitions", "").split(",")
    ]
    cpus = min((int(n.get("CPUTot") or 0) for n in nodes), default=0)
    memory = min((int(n.get("RealMemory") or 0) for n in nodes), default=0)
    counts = [gres_gpus(n.get("Gres", "")) for n in nodes]
    gpus_per_node = min((c for c, _ in counts), default=0)
    gres_type = next((t for _, t in counts if t), "")
    gpu = configured_gpu() or {"vendor": "", "model": gres_type, "arch": "", "memory_bytes": None}
    return {
        "gpus": [{"index": i, **gpu} for i in range(gpus_per_node)],
        "cpus": cpus,
        "memory_mb": memory,
        "partition": name,
        "nodes": len(nodes),
        "max_time_s": parse_duration_s(chosen.get("MaxTime", "")),
    }


# --- the sweep -----------------------------------------------------------------------------
def listed_jobs() -> dict[str, tuple[int, int]]:
    """This deployment's Slurm jobs not yet ended: Slurm id → (job id, attempt)."""
    try:
        done = client(["squeue", "--me", "-h", "-o", "%A|%j"], env=client_env())
    except ExecutorError:
        return {}
    if done.returncode != 0:
        return {}
    found = {}
    for line in done.stdout.splitlines():
        slurm_id, _, name = line.strip().partition("|")
        owner = parse_job_name(name)
        if owner is not None:
            found[slurm_id] = owner
    return found


def cancel_jobs(*, jobs: set[int] | None = None, keep: dict[int, int] | None = None) -> list[str]:
    """scancel this deployment's Slurm jobs: of the given rocpath jobs, or every one but
    the attempts in ``keep`` (job id → attempt that is running). Their Slurm ids."""
    doomed = []
    for slurm_id, (job, attempt) in listed_jobs().items():
        if jobs is not None and job not in jobs:
            continue
        if keep is not None and keep.get(job) == attempt:
            continue
        doomed.append(slurm_id)
    return doomed if scancel(*doomed) else []
