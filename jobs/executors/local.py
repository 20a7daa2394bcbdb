"""Run the stack runner as a local subprocess, in a sandbox where one starts.

Used by the embedded default, development and tests, and wherever no container
engine answers. Sandboxed (jobs/executors/sandbox.py), each job gets a sandbox of
its own: it sees only its inputs, its out folder and the tools, as a uid of its own,
without network, and whatever it started dies with it. The sandbox starts one of two
ways, from one mount plan (ROCPATH_LOCAL_SANDBOX_RUNNER): forked from the sandboxed
zygote, whose child builds the job's namespaces, mounts and uid itself before the job
runs with the stack already imported (stack/zygote.py, stack/sandbox.py; the default,
about twice the dispatch rate), or a fresh interpreter under bwrap and setpriv (also
the fallback when the zygote cannot start; a sandbox that cannot be built is never
fallen back from: the job errors). Where no sandbox can start, kinds that read a
team's code refuse to run unless an operator allows it (ROCPATH_LOCAL_UNSANDBOXED);
others run as before: in a process group of their own (what cancel and timeout kill,
so tools the runner started die with it), forked from the zygote or a fresh
interpreter. PR_SET_PDEATHSIG makes the runner die with its worker either way.

This module chooses how a job starts; the runners are in jobs/executors/runners, and
following one (output, deadline, cancel, heartbeat) is the loop every engine shares
(jobs/executors/base.py).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from pathlib import Path

from django.conf import settings

from jobs.executors.base import (
    ExecutionHooks,
    Executor,
    ExecutorError,
    JobSpec,
    Outcome,
    log,
)
from jobs.executors.runners import (
    PopenRunner,
    Runner,
    SandboxRunner,
    ZygoteError,
    zygote_for,
)
from jobs.executors.sandbox import (
    MIB,
    SANDBOX_TMP,
    layout_for,
    limits_for,
    memory_group,
    own,
    sandbox_problem,
    sandbox_request,
)
from stack.cgroup import JobGroup
from stack.kinds import KINDS

logger = logging.getLogger(__name__)

# Environment variables a job may inherit from the worker: tool lookup and GPU
# selection, never the worker's secrets (DATABASE_URL, SECRET_KEY, ...).
PASS_ENV = (
    "PATH",
    "LANG",
    "LC_ALL",
    "TZ",
    "ROCM_PATH",
    "HIP_PATH",
    "CUDA_HOME",
    "LD_LIBRARY_PATH",
    "ROCR_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "CUDA_VISIBLE_DEVICES",
    "OPENBLAS_CORETYPE",
    "OPENBLAS_L2_SIZE",
)


def visible_devices(hardware: dict) -> dict[str, str]:
    """The variables that show a local runner only the GPUs leased to its job (jobs.leases).

    Indices are the host's, in the inventory's order: nvidia-smi's, which is PCI
    bus order (hence CUDA_DEVICE_ORDER); for AMD the probe's (amd-smi, else rocm-smi
    or rocminfo), taken to match ROCr's own numbering, both being PCI bus order on
    the hosts we know of (not checked on an AMD GPU here). They replace whatever
    the worker's own environment said.
    """
    indices = hardware.get("gpu_indices")
    if not indices:
        return {}
    listed = ",".join(str(i) for i in indices)
    if hardware.get("gpu_vendor") == "nvidia":
        return {"CUDA_VISIBLE_DEVICES": listed, "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    if hardware.get("gpu_vendor") == "amd":
        # ROCr picks by host index; HIP then numbers what ROCr shows from 0
        inside = ",".join(str(i) for i in range(len(indices)))
        return {"ROCR_VISIBLE_DEVICES": listed, "HIP_VISIBLE_DEVICES": inside}
    return {}


class LocalExecutor(Executor):
    name = "local"

    def command(self, spec: JobSpec) -> list[str]:
        python = settings.ROCPATH_STACK_PYTHON or sys.executable
        return [
            python,
            "-m",
            "stack",
            "run",
            spec.kind,
            "--params",
            str(spec.params_file),
            "--out",
            str(spec.out_dir),
            "--work",
            str(spec.work_dir),
        ]

    def environment(self, spec: JobSpec) -> dict[str, str]:
        env = {key: os.environ[key] for key in PASS_ENV if key in os.environ}
        env.update(
            {
                "PYTHONPATH": str(Path(settings.BASE_DIR)),
                "PYTHONUNBUFFERED": "1",
                "HOME": str(spec.job_dir),
                "ROCPATH_JOB_ID": str(spec.job_id),
            }
        )
        if spec.cache_dir is not None:
            env["ROCPATH_CACHE_DIR"] = str(spec.cache_dir)
        env.update(visible_devices(spec.hardware))
        return env

    def sandbox_environment(self, spec: JobSpec) -> dict[str, str]:
        """The job's environment inside its sandbox: HOME and TMPDIR in its private /tmp."""
        env = self.environment(spec)
        env.update(
            {
                "HOME": SANDBOX_TMP,
                "TMPDIR": SANDBOX_TMP,
                "USER": "rocpath-job",
                "LOGNAME": "rocpath-job",
                "PYTHONDONTWRITEBYTECODE": "1",  # the stack code is read-only
            }
        )
        return env

    def sandboxed(self, spec: JobSpec) -> bool:
        """Whether this job runs in a sandbox; an ExecutorError when it must and cannot."""
        problem = sandbox_problem()
        if problem is None:
            return True
        kind = KINDS.get(spec.kind)
        if kind is not None and kind.takes_source and not settings.ROCPATH_LOCAL_UNSANDBOXED:
            raise ExecutorError(
                f"{spec.kind} jobs run a team's code and this worker cannot sandbox them: "
                f"{problem}. Install bubblewrap (apt-get install bubblewrap) and run the worker "
                "as root, use the docker executor, or let an operator allow unsandboxed local "
                "jobs with ROCPATH_LOCAL_UNSANDBOXED=1."
            )
        return False

    def prepare(self, spec: JobSpec) -> None:
        """Inputs appear in the work folder: bound there in a sandbox, else as links."""
        super().prepare(spec)
        if self.sandboxed(spec):
            for name, path in spec.inputs.items():
                point = spec.work_dir / name
                if path.is_dir():
                    point.mkdir(exist_ok=True)
                else:
                    point.touch()
            uid = layout_for(spec, self._python(), Path(settings.BASE_DIR)).uid
            own(spec.out_dir, uid, uid)
            if spec.cache_dir is not None:
                own(spec.cache_dir, uid, uid)
            return
        for name, path in spec.inputs.items():
            link = spec.work_dir / name
            if not link.is_symlink():
                link.symlink_to(path, target_is_directory=path.is_dir())

    @staticmethod
    def _python() -> str:
        return settings.ROCPATH_STACK_PYTHON or sys.executable

    def start(self, spec: JobSpec, hooks: ExecutionHooks) -> Runner:
        group, why_not = memory_group(spec)
        try:
            runner = self._start(spec, group)
        except BaseException:
            if group is not None:
                group.remove()
            raise
        runner.memory_group = group
        runner.watch_out(spec)
        try:
            self._say_started(spec, hooks, runner, why_not)
        except BaseException:
            # A hook raised (the database went away): nothing will follow this runner, and
            # a retry would run the job beside it. It goes, with its watch and its group.
            runner.kill()
            with contextlib.suppress(Exception):
                runner.wait(Outcome())
            raise
        return runner

    @staticmethod
    def _say_started(spec: JobSpec, hooks: ExecutionHooks, runner: Runner, why_not: str) -> None:
        group = runner.memory_group
        log(hooks, f"runner started: process group {runner.pid} ({runner.mode})")
        if group is not None:
            held = f"its processes together held to {group.limit // MIB} MiB"
            held += f" (cgroup v{group.version} {group.path}, no swap)"
        else:
            sandboxed = runner.mode.startswith("sandboxed")
            each = limits_for(spec).address_space if sandboxed else spec.memory_limit_bytes
            held = (
                f"each process held to {each // MIB} MiB of address space" if each else "no limit"
            )
            held += f", not the job as a whole: no memory cgroup ({why_not})"
        log(hooks, f"memory: {held}")

    def _start(self, spec: JobSpec, group: JobGroup | None) -> Runner:
        argv = self.command(spec)
        procs = group.procs if group is not None else None
        if self.sandboxed(spec):
            env = self.sandbox_environment(spec)
            if settings.ROCPATH_LOCAL_SANDBOX_RUNNER == "zygote":
                layout = layout_for(spec, argv[0], Path(settings.BASE_DIR))
                box = sandbox_request(layout, limits_for(spec, grouped=group is not None))
                try:
                    runner = zygote_for(argv[0], env, sandboxed=True).spawn(
                        argv[1:], env, spec.job_dir, None, sandbox=box, cgroup_procs=procs
                    )
                    runner.mode = f"sandboxed, forked from the zygote, uid {layout.uid}"
                    return runner
                except ZygoteError as exc:
                    logger.warning("sandboxed zygote unavailable, starting bwrap: %s", exc)
            return SandboxRunner.start(spec, argv, env, group)
        env = self.environment(spec)
        # held by its cgroup, the job gets no RLIMIT_AS: that counts address space
        memory = None if group is not None else spec.memory_limit_bytes
        if settings.ROCPATH_LOCAL_ZYGOTE:
            try:
                return zygote_for(argv[0], env).spawn(
                    argv[1:], env, spec.job_dir, memory, cgroup_procs=procs
                )
            except ZygoteError as exc:
                logger.warning("zygote unavailable, starting a fresh interpreter: %s", exc)
        return PopenRunner.start(argv, env, spec.job_dir, memory, procs)
