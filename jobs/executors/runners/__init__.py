"""How a local runner is started: a fresh interpreter (bare or under bubblewrap) or a
fork of the worker process's zygote; each is a Runner that the follow loop drives."""

from jobs.executors.runners.process import KILL_GRACE_S, PopenRunner, Runner, SandboxRunner
from jobs.executors.runners.zygote import (
    SandboxSetupError,
    Zygote,
    ZygoteError,
    ZygoteRunner,
    zygote_environment,
    zygote_for,
)

__all__ = [
    "KILL_GRACE_S",
    "PopenRunner",
    "Runner",
    "SandboxRunner",
    "SandboxSetupError",
    "Zygote",
    "ZygoteError",
    "ZygoteRunner",
    "zygote_environment",
    "zygote_for",
]
