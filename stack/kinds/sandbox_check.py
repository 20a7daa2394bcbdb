"""The sandbox-check kind: try one thing a job must not be able to do.

Operators run it to see that a worker's sandbox holds (network none, read-only
root, pids and memory limits); the container tests run it to prove it. The job
reports what happened to the ACTION: "failed" when the system refused it (the
sandbox held), "succeeded" when it went through. A memory hog that the kernel
kills never gets to report: the executor sees the OOM kill and says so.
"""

from __future__ import annotations

import os
import time
from typing import Any

from stack.contract import FAILED, SUCCEEDED
from stack.kinds.base import Cap, Kind
from stack.runtime import RunContext, RunResult

KIND = Kind(
    name="sandbox-check",
    title="Sandbox check",
    description=(
        "Tries one thing a job must not be able to do (write outside its out folder, "
        "open a network connection, fork without bound, allocate more memory than "
        "allowed) and reports whether the system let it: failed = refused."
    ),
    params_schema={
        "type": "object",
        "properties": {
            "action": {
                "type": "string",
                "enum": ["write-outside", "network", "fork-bomb", "allocate-memory"],
                "default": "write-outside",
            },
            "max_processes": {
                "type": "integer",
                "minimum": 1,
                "maximum": 100_000,
                "default": 5000,
                "description": "fork-bomb: stop after this many processes.",
            },
            "megabytes": {
                "type": "integer",
                "minimum": 1,
                "maximum": 1_048_576,
                "default": 4096,
                "description": "allocate-memory: how much to allocate and touch.",
            },
            "processes": {
                "type": "integer",
                "minimum": 1,
                "maximum": 64,
                "default": 1,
                "description": (
                    "allocate-memory: in this many processes at once, each allocating "
                    "megabytes (what a per-process limit lets through)."
                ),
            },
        },
        "additionalProperties": False,
    },
    default_timeout_s=120,
    runner="stack.kinds.sandbox_check:run",
    param_caps={
        "megabytes": Cap.MEMORY_MB,
        "max_processes": Cap.PROCESSES,
        "processes": Cap.PROCESSES,
    },
)


# Places outside the out folder a job might try to write to.
OUTSIDE_PATHS = (
    "/etc/rocpath-sandbox-check",
    "/rocpath-sandbox-check",
    "/opt/rocpath-sandbox-check",
)
# TEST-NET-1 (RFC 5737): never routed, and not a private range. It is only tried
# when the job sees no network interface but loopback, so nothing is ever sent.
UNROUTABLE = ("192.0.2.1", 9)


def _write_outside(params: dict[str, Any], ctx: RunContext) -> RunResult:
    targets = [*OUTSIDE_PATHS, str(ctx.work / "rocpath-sandbox-check")]
    written, refused = [], []
    for path in targets:
        try:
            with open(path, "w") as handle:
                handle.write("sandbox check\n")
        except OSError as exc:
            refused.append(f"{path}: {exc.strerror}")
        else:
            written.append(path)
            os.unlink(path)
    summary = {"written": written, "refused": refused}
    if written:
        return RunResult(status=SUCCEEDED, summary=summary)
    return RunResult(
        status=FAILED, summary=summary, error="every write outside the out folder was refused"
    )


def _network(params: dict[str, Any], ctx: RunContext) -> RunResult:
    try:
        interfaces = sorted(os.listdir("/sys/class/net"))
    except OSError:
        interfaces = []
    outside = [name for name in interfaces if name != "lo"]
    if outside:
        # Not isolated: say so without sending anything anywhere.
        return RunResult(status=SUCCEEDED, summary={"interfaces": interfaces})
    import socket

    try:
        socket.create_connection(UNROUTABLE, timeout=2).close()
    except OSError as exc:
        return RunResult(
            status=FAILED,
            summary={"interfaces": interfaces, "connect": str(exc)},
            error=f"no network: {exc}",
        )
    return RunResult(status=SUCCEEDED, summary={"interfaces": interfaces, "connect": "ok"})


def _fork_bomb(params: dict[str, Any], ctx: RunContext) -> RunResult:
    limit = int(params["max_processes"])
    children: list[int] = []
    refused = ""
    try:
        while len(children) < limit:
            try:
                pid = os.fork()
            except OSError as exc:
                refused = f"fork refused after {len(children)} processes: {exc.strerror}"
                break
            if pid == 0:
                time.sleep(60)
                os._exit(0)
            children.append(pid)
    finally:
        for pid in children:
            try:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
            except OSError:
                continue
    summary = {"processes_started": len(children), "limit_tried": limit}
    if refused:
        return RunResult(status=FAILED, summary=summary, error=refused)
    return RunResult(status=SUCCEEDED, summary=summary)


def _hold(megabytes: int, ctx: RunContext, who: str) -> list[bytearray]:
    """Allocate and touch ``megabytes``, saying every 64 MiB how much is held; a MemoryError
    (a per-process limit) propagates with what was held in its args."""
    blocks: list[bytearray] = []
    try:
        for i in range(megabytes):
            block = bytearray(1024 * 1024)
            block[::4096] = b"x" * len(block[::4096])  # touch every page
            blocks.append(block)
            if i % 64 == 0:
                ctx.emit.log(f"{who}: {i} MiB held")
    except MemoryError as exc:
        raise MemoryError(len(blocks)) from exc
    return blocks


def _allocate(params: dict[str, Any], ctx: RunContext) -> RunResult:
    megabytes, processes = int(params["megabytes"]), int(params.get("processes", 1))
    children = []
    for k in range(1, processes):
        pid = os.fork()
        if pid == 0:  # each child holds its share a second, so that all overlap
            code = 0
            try:
                _hold(megabytes, ctx, f"process {k}")
                time.sleep(1.0)
            except MemoryError:
                code = 1
            os._exit(code)
        children.append(pid)
    refused = ""
    try:
        blocks = _hold(megabytes, ctx, "process 0")
        held = len(blocks)
        time.sleep(1.0 if children else 0)  # held meanwhile
    except MemoryError as exc:
        held = exc.args[0]
        refused = f"allocation refused after {held} MiB"
    ended = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children]
    summary = {"allocated_mb": held, "processes": processes}
    if not refused and any(ended):
        refused = f"processes that did not hold their {megabytes} MiB: {sum(map(bool, ended))}"
    if refused:
        return RunResult(status=FAILED, summary=summary, error=refused)
    return RunResult(status=SUCCEEDED, summary=summary)


ACTIONS = {
    "write-outside": _write_outside,
    "network": _network,
    "fork-bomb": _fork_bomb,
    "allocate-memory": _allocate,
}


def run(params: dict[str, Any], ctx: RunContext) -> RunResult:
    """Do the one action asked for and report whether the system let it happen."""
    ctx.emit.log(f"sandbox check: {params['action']}")
    return ACTIONS[params["action"]](params, ctx)
