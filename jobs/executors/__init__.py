"""Executors registered by name and imported lazily, so a worker without the
Docker SDK (or a cluster client) can still load the ones it has."""

from __future__ import annotations

from importlib import import_module

from jobs.executors.base import Executor, ExecutorError

ENGINES: dict[str, str] = {
    "local": "jobs.executors.local:LocalExecutor",
    "docker": "jobs.executors.docker:DockerExecutor",
    # slurm: sbatch / squeue / scancel on a cluster sharing ARTIFACT_ROOT (docs/fleet.md)
    "slurm": "jobs.executors.slurm:SlurmExecutor",
}

_resolved: str | None = None


def resolve_executor() -> str:
    """The engine this worker uses: the setting, with "auto" decided once per process.

    auto means docker when the host's engine answers and already has the default
    job image, local otherwise; the worker log and `make run` say which.
    """
    global _resolved  # decided once per worker process
    from django.conf import settings

    if settings.ROCPATH_EXECUTOR != "auto":
        return settings.ROCPATH_EXECUTOR
    if _resolved is None:
        try:
            from jobs.executors.docker import client

            client().images.get(settings.ROCPATH_IMAGE)
            _resolved = "docker"
        except Exception:  # no SDK, no engine, or no image: run jobs locally
            _resolved = "local"
    return _resolved


def engine_class(name: str) -> type[Executor]:
    """The class of a registered engine, imported now (its class attributes, unstarted)."""
    try:
        target = ENGINES[name]
    except KeyError:
        raise ExecutorError(f"unknown executor {name!r}; known: {', '.join(ENGINES)}") from None
    module_name, _, class_name = target.partition(":")
    return getattr(import_module(module_name), class_name)


def get_executor(name: str) -> Executor:
    return engine_class(name)()


__all__ = [
    "ENGINES",
    "Executor",
    "ExecutorError",
    "engine_class",
    "get_executor",
    "resolve_executor",
]
