"""Celery worker hooks: the artifact root checked and recovery at start-up, database
connection hygiene per task."""

from __future__ import annotations

import logging

from celery.signals import task_prerun, worker_init, worker_ready, worker_shutdown
from celery.worker.control import control_command
from django.db import close_old_connections

logger = logging.getLogger(__name__)


@worker_init.connect
def _check_artifact_root(sender: object = None, **_: object) -> None:
    """Refuse to start on an artifact root that is read-only or full: every job would fail.

    SystemExit, not an exception: Celery logs a receiver's exception and starts anyway.
    A worker of the control or alert queues alone runs no job and writes nothing there: it starts
    whatever the disk, since the reaper it serves is what ends jobs a full disk broke.
    """
    from pathlib import Path

    from django.conf import settings

    from jobs.routing import service_queues
    from jobs.storage import root_problem

    queues = getattr(getattr(getattr(sender, "app", None), "amqp", None), "queues", None)
    consumed = set(getattr(queues, "consume_from", None) or ())
    if consumed and consumed <= service_queues():
        return
    problem = root_problem(Path(settings.ARTIFACT_ROOT), min_free_mb=settings.ROCPATH_MIN_FREE_MB)
    if problem:
        logger.critical("the worker does not start: %s", problem)
        raise SystemExit(f"rocpath: the worker does not start: {problem}")


@worker_ready.connect
def _recover_jobs(sender=None, **_: object) -> None:
    from jobs.services import recover_worker_jobs

    name = getattr(sender, "hostname", None)
    if not name:
        return
    ended = recover_worker_jobs(name)
    if ended:
        logger.warning("worker %s ended jobs left running by its previous life: %s", name, ended)
    from jobs.executors import resolve_executor

    executor = resolve_executor()
    logger.info("worker %s runs jobs with the %s executor", name, executor)
    if executor == "docker":
        from jobs.executors.docker import remove_containers

        if removed := remove_containers(worker=name):
            logger.warning("worker %s removed containers of its previous life: %s", name, removed)
    if executor == "slurm":
        from jobs.services import cancel_slurm_jobs_of

        if cancelled := cancel_slurm_jobs_of(ended):
            logger.warning(
                "worker %s cancelled Slurm jobs of its previous life: %s", name, cancelled
            )


@control_command(name="rocpath_sweep_containers")
def sweep_containers(state: object) -> dict:
    """Remove this host's job containers whose job has ended (broadcast by the reaper); a
    worker of the slurm executor also cancels this deployment's Slurm jobs whose job has."""
    from jobs.executors import resolve_executor
    from jobs.services import sweep_containers as sweep

    swept: dict = {"removed": sweep()}
    if resolve_executor() == "slurm":
        from jobs.services import sweep_slurm_jobs

        swept["scancelled"] = sweep_slurm_jobs()
    return swept


@task_prerun.connect
def _fresh_connections(**_: object) -> None:
    """What Django does per request: drop connections that are broken or past CONN_MAX_AGE."""
    close_old_connections()


@task_prerun.connect
def _control_beat(sender: object = None, **_: object) -> None:
    """A task taken from the control queue stamps the control worker's beat (/healthz).

    Only a delivery from that queue counts (a task run eagerly, in tests or a shell, says
    nothing of the control worker); stamped as the task starts, so one that then fails on
    a passing error still shows the worker alive. A failed stamp is logged, never a reason
    for the dispatcher not to run.
    """
    from django.conf import settings

    request = getattr(sender, "request", None)
    delivery = getattr(request, "delivery_info", None) or {}
    if delivery.get("routing_key") != settings.ROCPATH_CONTROL_QUEUE:
        return
    from jobs.models.control_beat import record_beat

    try:
        record_beat(str(getattr(sender, "name", "")), str(getattr(request, "hostname", "") or ""))
    except Exception:  # the database is down: the task itself will say so
        logger.warning("could not record the control worker's beat", exc_info=True)


# --- fleet: announcement, beat and stop (jobs.fleet) ---
@worker_init.connect
def _check_inventory(**_: object) -> None:
    """Refuse to start with a malformed ROCPATH_WORKER_INVENTORY: announcing GPUs the
    operator did not mean would route jobs to a worker that cannot run them."""
    from django.core.exceptions import ImproperlyConfigured

    from jobs.fleet import configured_inventory

    try:
        configured_inventory()
    except ImproperlyConfigured as exc:
        logger.critical("the worker does not start: %s", exc)
        raise SystemExit(f"rocpath: the worker does not start: {exc}") from None


@worker_ready.connect
def _announce(sender=None, **_: object) -> None:
    """Consume this worker's capability queues and record it in the fleet; beat from now."""
    from jobs.fleet import announce

    if getattr(sender, "hostname", None):
        announce(sender)


@worker_shutdown.connect
def _stopped(sender=None, **_: object) -> None:
    from jobs.fleet import stop

    if name := getattr(sender, "hostname", None):
        stop(name)


# --- end fleet ---
