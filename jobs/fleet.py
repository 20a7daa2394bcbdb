"""Workers announce themselves: what they run jobs with, what they have, that they live.

At worker_ready (jobs.signals) a worker works out its inventory, starts consuming the
capability queues that inventory gives it (jobs.routing.capability_queues: one per GPU
vendor and architecture, one per host) and upserts its jobs.models.Worker row; a daemon
thread of its main process then beats every ROCPATH_WORKER_BEAT_S (last seen, jobs
running), and worker_shutdown marks it stopped. Routing reads those rows, so queues come
from announcements, never from an operator's hand.

A thread rather than a timer of Celery's event loop: a beat that waits on a slow database
must not hold up the loop that receives tasks, and one that fails (the database restarts)
is logged and tried again next beat, never a reason for the worker to stop.

The inventory comes, in this order, from ROCPATH_WORKER_INVENTORY (an operator's
configured host, and how tests give two workers different GPUs), from the Slurm
executor's partition, or from the probe.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connections
from django.utils import timezone

from jobs.choices import JobStatus
from jobs.models import Job, Worker
from jobs.routing import capability_queues, service_queues

logger = logging.getLogger(__name__)

VENDORS = ("amd", "nvidia")
STOP_JOIN_S = 10  # how long a stopping worker waits for a beat in flight


def parse_inventory(raw: str) -> dict:
    """ROCPATH_WORKER_INVENTORY's value read: inline JSON (it starts with "{") or a path to
    a JSON file, either an inventory or a probe's result.json (its "environment" is one).

    Raises ImproperlyConfigured saying what is wrong, so that a worker refuses to start
    with GPUs it does not have rather than announce them.
    """
    text = raw.strip()
    where = "ROCPATH_WORKER_INVENTORY"
    if not text.startswith("{"):
        path = Path(text)
        where = f"ROCPATH_WORKER_INVENTORY ({path})"
        try:
            text = path.read_text()
        except OSError as exc:
            raise ImproperlyConfigured(
                f"{where}: not inline JSON and not a readable file: {exc}"
            ) from None
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{where}: not valid JSON: {exc}") from None
    if isinstance(doc, dict) and "gpus" not in doc and isinstance(doc.get("environment"), dict):
        doc = doc["environment"]  # a probe's result.json
    if not isinstance(doc, dict):
        raise ImproperlyConfigured(f"{where}: must be a JSON object with a list of 'gpus'")
    gpus = doc.get("gpus", [])
    if not isinstance(gpus, list):
        raise ImproperlyConfigured(f"{where}: 'gpus' must be a list")
    positions: dict[str, int] = {}
    for n, gpu in enumerate(gpus):
        if not isinstance(gpu, dict) or gpu.get("vendor") not in VENDORS:
            raise ImproperlyConfigured(
                f"{where}: gpus[{n}] must be an object whose vendor is amd or nvidia"
            )
        memory = gpu.get("memory_bytes")
        if memory is not None and (isinstance(memory, bool) or not isinstance(memory, int)):
            raise ImproperlyConfigured(f"{where}: gpus[{n}].memory_bytes must be an integer")
        for key in ("model", "arch"):
            if gpu.get(key) is not None and not isinstance(gpu[key], str):
                raise ImproperlyConfigured(f"{where}: gpus[{n}].{key} must be a string")
        position = positions[gpu["vendor"]] = positions.get(gpu["vendor"], -1) + 1
        gpu.setdefault("index", position)
    for key in ("cpus", "memory_mb"):
        value = doc.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise ImproperlyConfigured(f"{where}: {key} must be a number")
    return {**doc, "gpus": gpus, "source": "configured"}


def configured_inventory() -> dict | None:
    """The operator's configured inventory (ROCPATH_WORKER_INVENTORY), or None."""
    raw = settings.ROCPATH_WORKER_INVENTORY
    return parse_inventory(raw) if raw else None


def announced_inventory(executor: str) -> dict:
    """What this worker tells the fleet it has: its GPUs (configured, its Slurm partition's,
    or probed), the CPUs and memory a job may get, for a docker worker its images, and the
    models its registry holds (a job names one as ``registered_model``)."""
    inventory = configured_inventory()
    if inventory is None and executor == "slurm":
        try:
            from jobs.executors.slurm import partition_inventory
        except ImportError as exc:
            logger.error(
                "the slurm executor's partition inventory is not available (%s): "
                "announcing what the probe finds on this host instead",
                exc,
            )
        else:
            from jobs.executors import ExecutorError

            try:
                inventory = dict(partition_inventory())
            except ExecutorError as exc:
                # A Slurm worker that cannot read its partition can run nothing: it says
                # why and stops, and its supervisor starts it again (SystemExit: Celery
                # logs a receiver's exception and starts anyway).
                logger.critical("the slurm worker does not start: %s", exc)
                raise SystemExit(
                    f"rocpath: the slurm worker does not start: its partition could not be "
                    f"read: {exc}"
                ) from exc
    if inventory is None:
        from jobs.executors.gpu_profiles import worker_inventory

        inventory = dict(worker_inventory())
    lent = settings.ROCPATH_WORKER_GPUS
    if lent is not None:  # the GPUs this worker does not lend are shown, never routed to
        positions: dict[str, int] = {}
        for gpu in inventory.get("gpus") or []:
            vendor = str(gpu.get("vendor"))
            position = positions[vendor] = positions.get(vendor, -1) + 1
            gpu["lent"] = position in lent
    if executor == "docker":
        inventory.setdefault("cpus", settings.ROCPATH_DOCKER_MAX_CPUS)
        inventory.setdefault("memory_mb", settings.ROCPATH_DOCKER_MAX_MEMORY_MB)
        inventory["images"] = docker_images()
    else:
        inventory.setdefault("cpus", settings.HOST_CPUS)
        inventory.setdefault("memory_mb", settings.HOST_MEMORY_MB)
    if settings.ROCPATH_MODEL_ROOT:  # inference-bench's registered models, by name
        from stack.inference.registry import names

        inventory["models"] = names(settings.ROCPATH_MODEL_ROOT)
    return inventory


def docker_images() -> list[str]:
    """The tags, ids and digests of the images this worker's engine has; best effort (an
    engine that does not answer gives none, and the worker runs no image job until its
    next start says otherwise)."""
    try:
        from jobs.executors.docker import client

        found: list[str] = []
        for image in client().images.list():
            found += [*image.tags, image.id, *(image.attrs.get("RepoDigests") or [])]
        return sorted(set(found))
    except Exception as exc:  # no SDK, no engine
        logger.warning("could not list the Docker engine's images: %s", exc)
        return []


def consumed_queues(consumer: Any) -> list[str]:
    """The queues a Celery consumer takes tasks from."""
    return list(consumer.app.amqp.queues.consume_from or {})


def serves_jobs(queues: list[str]) -> bool:
    """A worker of the control or alert queues alone runs no job, so it has no
    capability."""
    return bool(set(queues) - service_queues())


def announce(consumer: Any) -> Worker | None:
    """At worker_ready: consume this worker's capability queues and record its row;
    then beat until shutdown. None (logged) when the database could not be reached: the
    beat announces it then."""
    from jobs.executors import resolve_executor
    from jobs.leases import host

    name = consumer.hostname
    executor = resolve_executor()
    queues = consumed_queues(consumer)
    inventory: dict = {}
    if serves_jobs(queues):
        inventory = announced_inventory(executor)
        for queue in capability_queues(inventory, host()):
            consumer.add_task_queue(queue)
        queues = consumed_queues(consumer)
    fields = {
        "host": host(),
        "executor": executor,
        "queues": queues,
        "inventory": inventory,
        "started_at": timezone.now(),
    }
    _start_beat(name, fields)
    try:
        return record(name, fields)
    except Exception:
        logger.exception("worker %s could not announce itself; the next beat tries again", name)
        return None


def record(name: str, fields: dict) -> Worker:
    """Upsert the worker's row as live now."""
    now = timezone.now()
    worker, _ = Worker.objects.update_or_create(
        name=name,
        defaults={
            **fields,
            "jobs_running": running(name),
            "last_seen_at": now,
            "stopped_at": None,
        },
    )
    logger.info(
        "worker %s announced: %s executor, %d GPU(s), queues %s",
        name,
        fields["executor"],
        len(fields["inventory"].get("gpus") or []),
        ", ".join(fields["queues"]),
    )
    return worker


def running(name: str) -> int:
    return Job.objects.filter(worker=name, status=JobStatus.RUNNING).count()


def beat(name: str, fields: dict) -> None:
    """One beat: seen now, with its running jobs; the whole row again if it went missing
    (or its announcement failed) or was marked stopped meanwhile."""
    now = timezone.now()
    touched = Worker.objects.filter(name=name, stopped_at__isnull=True).update(
        last_seen_at=now, jobs_running=running(name)
    )
    if not touched:
        record(name, fields)


def stop(name: str) -> None:
    """At worker_shutdown: the beat ends and the row says the worker stopped."""
    beater = _beats.pop(name, None)
    if beater is not None:  # ended first: a beat in flight would announce it live again
        beater.stopping.set()
        beater.join(timeout=STOP_JOIN_S)
    try:
        Worker.objects.filter(name=name).update(
            stopped_at=timezone.now(), jobs_running=running(name)
        )
        logger.info("worker %s marked stopped", name)
    except Exception:
        logger.exception("worker %s could not record its stop; it is shown gone in time", name)


class _Beat(threading.Thread):
    def __init__(self, name: str, fields: dict) -> None:
        super().__init__(name=f"rocpath-beat-{name}", daemon=True)
        self.worker = name
        self.fields = fields
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.wait(settings.ROCPATH_WORKER_BEAT_S):
            try:
                beat(self.worker, self.fields)
            except Exception:
                logger.exception(
                    "worker %s: the beat could not reach the database; it tries again in %s s",
                    self.worker,
                    settings.ROCPATH_WORKER_BEAT_S,
                )
            finally:
                connections.close_all()  # this thread's own; none kept across a fork


_beats: dict[str, _Beat] = {}


def _start_beat(name: str, fields: dict) -> None:
    if name in _beats:  # a consumer restarted (the broker came back): one beat is enough
        _beats[name].fields = fields
        return
    _beats[name] = _Beat(name, fields)
    _beats[name].start()
