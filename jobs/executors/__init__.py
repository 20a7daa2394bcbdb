"""Executors registered by name and imported lazily, so a worker without the
Docker SDK (or a cluster client) can still load the ones it has."""

from __future__ import annotations

from importlib import import_module

from jobs.executors.base import Executor, ExecutorError

ENGINES: dict[str, str] = {
    "local": "jobs.executors.local:LocalExecutor",
}


def get_executor(name: str) -> Executor:
    try:
        target = ENGINES[name]
    except KeyError:
        raise ExecutorError(f"unknown executor {name!r}; known: {', '.join(ENGINES)}") from None
    module_name, _, class_name = target.partition(":")
    return getattr(import_module(module_name), class_name)()


__all__ = ["ENGINES", "Executor", "ExecutorError", "get_executor"]
