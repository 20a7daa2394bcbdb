"""Run the stack runner in a container on the worker host's Docker engine.

The sandbox is the default, not an option: no network, read-only root with a
tmpfs for /tmp, a non-root user, every capability dropped, no-new-privileges,
memory / CPU / pids limits from the job within server-side caps. The job's
folder is mounted: params.json read-only, out/ writable, nothing else of the
host. The Docker socket is never mounted into a job. Containers carry labels
(deployment, job, worker) so that containers left by a dead worker can be found and
removed, and only this deployment's: another rocpath may share the engine.

Over 400 lines: one engine's three parts, each short, that share its labels and
client: the container's sandbox (container_params, limits_for), its run (start,
ContainerRun, ContainerOutput; its out folder watched by jobs.executors.outwatch) and
the sweep of what a lost worker left.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import threading
import time
from collections.abc import Iterable
from typing import Any

from django.conf import settings

from jobs.executors.base import (
    ExecutionHooks,
    Executor,
    ExecutorError,
    JobSpec,
    Outcome,
    Started,
    log,
)
from jobs.executors.gpu_profiles import (
    NO_GPU,
    GpuProfile,
    GpuUnavailable,
    profile_for,
    wants_gpus,
    worker_inventory,
)
from jobs.executors.outwatch import OutWatch

logger = logging.getLogger(__name__)

LABEL_JOB = "rocpath.job"
LABEL_WORKER = "rocpath.worker"
LABEL_MANAGED = "rocpath.managed"
LABEL_DEPLOYMENT = "rocpath.deployment"  # settings.ROCPATH_DEPLOYMENT: whose container it is
CONTAINER_UID = 10001  # the "rocpath" user of the job images
STOP_GRACE_S = 5
CONTAINER_TMP = "/tmp"  # noqa: S108 - the container's own tmpfs, not the host's /tmp


def client() -> Any:
    import docker

    try:
        engine = docker.from_env(timeout=30)
        engine.ping()
    except Exception as exc:  # DockerException, connection refused, permission denied
        raise ExecutorError(f"the Docker engine does not answer: {exc}", permanent=False) from exc
    return engine


def limits_for(hardware: dict) -> dict[str, int]:
    """Memory (MiB), CPUs and pids the job asked for, or this worker's defaults.

    A job that asks for more than this worker's cap is refused rather than quietly
    given less: the web side cannot know which host will run it, and a benchmark that
    got less than it asked for would measure something else without saying so.
    """
    memory = int(hardware.get("memory_mb") or settings.ROCPATH_DOCKER_MEMORY_MB)
    cpus = float(hardware.get("cpus") or settings.ROCPATH_DOCKER_CPUS)
    pids = int(hardware.get("pids") or settings.ROCPATH_DOCKER_PIDS)
    caps = (
        ("memory_mb", memory, "MiB", "MAX_MEMORY_MB", f", of the host's {settings.HOST_MEMORY_MB}"),
        ("cpus", cpus, "CPUs", "MAX_CPUS", f", of the host's {settings.HOST_CPUS}"),
        ("pids", pids, "processes", "MAX_PIDS", ""),
    )
    over = []
    for name, asked, unit, setting, host in caps:
        cap = getattr(settings, f"ROCPATH_DOCKER_{setting}")
        if asked > cap:
            over.append(
                f"hardware.{name}: the job asks for {_shown(asked)} {unit}, this worker's cap "
                f"is {cap} {unit} (ROCPATH_DOCKER_{setting}{host})"
            )
    if over:
        raise ExecutorError("; ".join(over))
    return {"memory_mb": memory, "nano_cpus": int(cpus * 1e9), "pids": pids}


def _shown(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else str(number)


def container_user() -> str:
    """Never root: the worker's own uid, or the image's rocpath user when the worker is root."""
    uid = os.getuid()
    return f"{CONTAINER_UID}:{CONTAINER_UID}" if uid == 0 else f"{uid}:{os.getgid()}"


def container_name(spec: JobSpec) -> str:
    """Unique on a shared engine: job ids repeat between deployments (and test suites)."""
    return f"rocpath-{settings.ROCPATH_DEPLOYMENT}-job-{spec.job_id}-a{spec.attempt}"


def container_params(spec: JobSpec, gpu: GpuProfile) -> dict[str, Any]:
    """The exact arguments of containers.create() for a job: the sandbox in one place."""
    from docker.types import DeviceRequest, LogConfig, Mount, Ulimit

    limits = limits_for(spec.hardware)
    memory = f"{limits['memory_mb']}m"
    mounts = [
        Mount("/job/params.json", str(spec.params_file), type="bind", read_only=True),
        Mount("/job/out", str(spec.out_dir), type="bind", read_only=False),
    ]
    for name, path in spec.inputs.items():
        mounts.append(Mount(f"/job/work/{name}", str(path), type="bind", read_only=True))
    environment = {"HOME": CONTAINER_TMP, "ROCPATH_JOB_ID": str(spec.job_id)}
    if spec.cache_dir is not None:
        mounts.append(Mount("/job/cache", str(spec.cache_dir), type="bind", read_only=False))
        environment["ROCPATH_CACHE_DIR"] = "/job/cache"
    params: dict[str, Any] = {
        "image": spec.image,
        "entrypoint": ["python3", "-m", "stack"],
        "command": [
            "run",
            spec.kind,
            "--params",
            "/job/params.json",
            "--out",
            "/job/out",
            "--work",
            "/job/work",
        ],
        "name": container_name(spec),
        "labels": {
            LABEL_MANAGED: "1",
            LABEL_DEPLOYMENT: settings.ROCPATH_DEPLOYMENT,
            LABEL_JOB: str(spec.job_id),
            LABEL_WORKER: spec.worker,
        },
        "mounts": mounts,
        "working_dir": "/job",
        "user": container_user(),
        "environment": {**environment, **gpu.environment},
        "network_mode": "none",
        "read_only": True,
        "tmpfs": {CONTAINER_TMP: f"rw,nosuid,nodev,exec,size={settings.ROCPATH_DOCKER_TMPFS_MB}m"},
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "mem_limit": memory,
        "memswap_limit": memory,  # no swap: over the limit is an OOM kill, not a crawl
        "nano_cpus": limits["nano_cpus"],
        "pids_limit": limits["pids"],
        # No file (in out/ or the tmpfs) grows past what could become an artifact.
        "ulimits": [
            Ulimit(
                name="fsize",
                soft=settings.ROCPATH_ARTIFACT_MAX_BYTES,
                hard=settings.ROCPATH_ARTIFACT_MAX_BYTES,
            )
        ],
        # What the engine keeps of the output besides what we stream: capped on its disk.
        "log_config": LogConfig(
            type="json-file",
            config={
                "max-size": f"{max(1, settings.ROCPATH_DOCKER_LOG_MAX_MB // 2)}m",
                "max-file": "2",
            },
        ),
        "init": True,  # a real PID 1 reaps the runner's children and forwards signals
        "detach": True,
        "stdin_open": False,
        "tty": False,
    }
    params.update(gpu.container_kwargs())
    if "device_requests" in params:
        params["device_requests"] = [DeviceRequest(**r) for r in params["device_requests"]]
    return params


class DockerExecutor(Executor):
    name = "docker"

    def __init__(self) -> None:
        self.engine = client()
        self.container: Any = None  # once start() made it

    def prepare(self, spec: JobSpec) -> None:
        super().prepare(spec)
        if os.getuid() == 0:  # the container's user must be able to write out/ (and the cache)
            for folder in (spec.out_dir, spec.cache_dir):
                if folder is not None:
                    os.chown(folder, CONTAINER_UID, CONTAINER_UID)

    def digest_of(self, image_id: str) -> str:
        """A repository digest when the image came from a registry, else its content id."""
        try:
            digests = self.engine.api.inspect_image(image_id).get("RepoDigests") or []
        except Exception:
            digests = []
        return digests[0].split("@", 1)[1] if digests else image_id

    def execute(self, spec: JobSpec, hooks: ExecutionHooks) -> Outcome:
        import docker

        try:
            return super().execute(spec, hooks)
        except docker.errors.APIError as exc:
            raise ExecutorError(
                f"the Docker engine failed: {exc.explanation or exc}", permanent=False
            ) from exc

    def start(self, spec: JobSpec, hooks: ExecutionHooks) -> ContainerRun:
        import docker

        if not spec.image:
            raise ExecutorError("no image was chosen for this job")
        try:
            # a CPU job never probes the host's GPUs (five tools, once per process)
            gpu = (
                profile_for(spec.hardware, worker_inventory())
                if wants_gpus(spec.hardware)
                else NO_GPU
            )
        except GpuUnavailable as exc:
            raise ExecutorError(str(exc)) from exc
        params = container_params(spec, gpu)
        try:
            try:
                self.container = self.engine.containers.create(**params)
            except docker.errors.APIError as exc:
                if exc.status_code != 409:
                    raise
                # The name (deployment, job, attempt) is taken: a container of this very
                # attempt that its worker did not live to remove. Ours to remove; once.
                remove_containers(jobs={spec.job_id})
                self.container = self.engine.containers.create(**params)
        except docker.errors.ImageNotFound:
            raise ExecutorError(
                f"image {spec.image} is not on this worker's host: build it with "
                "scripts/build-images.sh (docs/containers.md)"
            ) from None
        except docker.errors.APIError as exc:
            raise ExecutorError(
                f"could not create the container: {exc.explanation or exc}", permanent=False
            ) from exc
        # The id of the image this container was made from: what really ran, whatever
        # the tag points at by now.
        digest = self.digest_of(self.container.attrs.get("Image", ""))
        # Attached before it starts (as `docker run` does): attached to a container that
        # has already exited, the stream may never end.
        output = self.container.attach(stdout=True, stderr=True, stream=True, logs=True, demux=True)
        self.container.start()
        log(
            hooks,
            f"container {self.container.short_id} started from {spec.image} "
            f"({digest[:19]}), GPU profile {gpu.name}",
        )
        return ContainerRun(self.container, spec, digest, output)

    def cleanup(self, spec: JobSpec) -> None:
        # Removal (tens of ms) need not delay the job's result: it runs beside the
        # ingest. A worker that dies first leaves it to the reaper's sweep.
        if self.container is not None:
            threading.Thread(target=_remove, args=(self.container,), daemon=True).start()


class ContainerRun(Started):
    """A started container as the follow loop drives it: its output read by a thread of
    its own, its out folder watched by another (OutWatch), its end told by the engine."""

    def __init__(self, container: Any, spec: JobSpec, digest: str, output: Any) -> None:
        self.container, self.spec, self.digest = container, spec, digest
        self.output = ContainerOutput(output)
        self.watch = OutWatch(spec, kill=lambda: _kill(container))
        self.watch.start()
        self._next_poll = 0.0  # when the engine is next asked whether it still runs
        self._exited_at: float | None = None  # when it was first seen exited

    # The attach stream of a container that exited at once may never end even attached
    # before start (seen 2 of 5 with the engine under load): with no output, the engine is
    # asked every EXIT_POLL_S whether the container still runs, and the stream of one that
    # exited is given EXIT_DRAIN_S to end before it is taken as ended.
    EXIT_POLL_S = 1.0
    EXIT_DRAIN_S = 2.0

    def read(self, timeout: float) -> list[tuple[str, bytes]] | None:
        chunks = self.output.read(timeout)
        if chunks != []:
            return chunks
        now = time.monotonic()
        if self._exited_at is None and now >= self._next_poll:
            import docker
            import requests

            self._next_poll = now + self.EXIT_POLL_S
            # an engine that does not answer now is asked again at the next poll
            with contextlib.suppress(docker.errors.APIError, requests.exceptions.RequestException):
                self.container.reload()
                if self.container.status in {"exited", "dead"}:
                    self._exited_at = now
        if self._exited_at is not None and now - self._exited_at >= self.EXIT_DRAIN_S:
            return None
        return chunks

    def stop(self) -> None:
        _stop(self.container)

    def check(self, now: float) -> str:
        return self.watch.problem  # the watch killed it already

    def wait(self, outcome: Outcome) -> None:
        self.watch.stop()
        stopped = outcome.canceled or outcome.timed_out or bool(outcome.limit_exceeded)
        if self.watch.problem and not stopped:
            outcome.limit_exceeded = self.watch.problem
            stopped = True
        status = self.container.wait(timeout=60)
        if outcome.limit_exceeded:
            outcome.limit_exceeded = self.watch.final_problem()
        code = int(status.get("StatusCode", -1))
        if code == 137:  # SIGKILL: ours, or the kernel's OOM killer? Only the engine knows.
            self.container.reload()
            outcome.oom_killed = bool(self.container.attrs.get("State", {}).get("OOMKilled"))
            outcome.memory_limit_mb = limits_for(self.spec.hardware)["memory_mb"]
        if code > 128 and not stopped:  # the init reports a signal death as 128 + signal
            outcome.signal = code - 128
        else:
            outcome.exit_code = code
        outcome.image = self.spec.image
        outcome.image_digest = self.digest


class ContainerOutput:
    """The container's attached output (demultiplexed: (stdout, stderr) pairs), read by a
    thread and handed out as chunks."""

    MAX_CHUNKS = 64  # handed out per read, so the loop still looks at the clock

    def __init__(self, stream: Iterable[tuple[bytes | None, bytes | None]]) -> None:
        self.chunks: queue.Queue = queue.Queue()
        self.ended = False
        threading.Thread(target=_read_output, args=(stream, self.chunks), daemon=True).start()

    def read(self, timeout: float) -> list[tuple[str, bytes]] | None:
        if self.ended:
            return None
        try:
            items = [self.chunks.get(timeout=timeout)]
        except queue.Empty:
            return []
        while len(items) < self.MAX_CHUNKS:
            try:
                items.append(self.chunks.get_nowait())
            except queue.Empty:
                break
        if None in items:
            self.ended = True
            items = items[: items.index(None)]
        return items


def _kill(container: Any) -> None:
    with contextlib.suppress(Exception):
        container.kill()


def _remove(container: Any) -> None:
    with contextlib.suppress(Exception):
        container.remove(force=True)


def _stop(container: Any) -> None:
    """SIGTERM to the runner (through the init), SIGKILL after the grace period."""
    with contextlib.suppress(Exception):
        container.stop(timeout=STOP_GRACE_S)


def _read_output(stream: Iterable[tuple[bytes | None, bytes | None]], chunks: queue.Queue) -> None:
    """Put the container's output on ``chunks`` as (stream, bytes), b"" as each stream's
    end, then None; the follow loop cuts it into lines."""
    try:
        for out, err in stream:
            for stream, chunk in (("stdout", out), ("stderr", err)):
                if chunk:
                    chunks.put((stream, chunk))
    except Exception as exc:  # the engine went away mid-stream
        chunks.put(("stderr", f"\n[rocpath] lost the container's output: {exc}\n".encode()))
    finally:
        chunks.put(("stdout", b""))
        chunks.put(("stderr", b""))
        chunks.put(None)


def _listed(engine: Any, *labels: str) -> list[dict]:
    """This deployment's job containers as the engine lists them (no per-container inspect
    to race with). Another rocpath on the same engine has containers of jobs whose ids mean
    nothing here: they are never listed, so never removed."""
    return engine.api.containers(
        all=True,
        filters={
            "label": [
                f"{LABEL_MANAGED}=1",
                f"{LABEL_DEPLOYMENT}={settings.ROCPATH_DEPLOYMENT}",
                *labels,
            ]
        },
    )


def remove_containers(*, worker: str | None = None, jobs: set[int] | None = None) -> list[str]:
    """Remove this deployment's job containers left behind: by a worker's name, or of given
    jobs."""
    try:
        engine = client()
    except ExecutorError:
        return []
    removed = []
    for item in _listed(engine, *([f"{LABEL_WORKER}={worker}"] if worker else [])):
        job = int((item.get("Labels") or {}).get(LABEL_JOB) or 0)
        if jobs is not None and job not in jobs:
            continue
        with contextlib.suppress(Exception):
            engine.api.remove_container(item["Id"], force=True)
            removed.append((item.get("Names") or [item["Id"][:12]])[0].lstrip("/"))
    return removed


def job_ids_of_containers() -> set[int]:
    """Jobs of this deployment that have a container on this host."""
    try:
        engine = client()
    except ExecutorError:
        return set()
    return {int((item.get("Labels") or {}).get(LABEL_JOB) or 0) for item in _listed(engine)}
