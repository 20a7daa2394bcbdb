"""A warm runner that forks one child per job: ``python -m stack.zygote --fd N``.

Starting a fresh interpreter and importing the stack costs tens of
milliseconds of CPU per job; a worker that runs many short jobs spends most of
its time there. The zygote pays that once: it imports the stack, then waits on
a Unix socket (inherited as fd N) for requests. For each it forks a child that
becomes exactly what ``python -m stack run …`` would have been: its own
session and process group, the job's environment, working folder, resource
limits and stdio (the three file descriptors passed with the request), and
the same ``stack.cli.main(argv)``. The child dies with the zygote and the
zygote with its worker (PR_SET_PDEATHSIG), so nothing outlives a lost worker.

The zygote is a fresh interpreter started with the job environment, never a
fork of the worker: no database password or secret key is in its memory.

It is used only where local jobs run unsandboxed (jobs/executors/local.py): a
sandboxed job gets a fresh interpreter in a bubblewrap sandbox of its own, since
children of one zygote share its uid, files and /proc, and jobs of different
teams must share nothing.

Protocol (SOCK_SEQPACKET, one JSON object per message):
  worker → zygote  {"argv": [...], "env": {...}, "cwd": "...", "memory_limit": int|null}
                   with three fds attached: stdin, stdout, stderr for the child
  zygote → worker  {"started": PID} or {"error": "..."}, later {"exited": PID, "status": WAITSTATUS}
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import sys

from stack.tools import make_die_with_parent

MAX_MESSAGE = 1 << 20

_DIE_WITH_PARENT = make_die_with_parent()  # libc loaded once, before any fork


def die_with_parent() -> None:
    """Ask the kernel to SIGKILL this process when its parent exits (Linux)."""
    if _DIE_WITH_PARENT is not None:
        _DIE_WITH_PARENT()


def _child(request: dict, fds: list[int], parent: int, close: list[int]) -> None:
    """In the forked child: become the job's runner process, then run it. Never returns."""
    code = 70
    try:
        os.setsid()
        die_with_parent()
        if os.getppid() != parent:  # the zygote died between fork() and prctl()
            os._exit(code)
        for target, fd in zip((0, 1, 2), fds, strict=True):
            os.dup2(fd, target)
        for fd in [*fds, *close]:
            os.close(fd)
        signal.set_wakeup_fd(-1)
        for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGPIPE):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if request.get("memory_limit"):
            limit = int(request["memory_limit"])
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        if "random" in sys.modules:
            sys.modules["random"].seed()  # children must not share the zygote's sequence

        from stack.cli import main

        argv = request["argv"]
        sys.argv = ["python -m stack", *argv]
        code = main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # the pipe may be gone; exit regardless
                stream.flush()
        os._exit(code)


def serve(sock: socket.socket) -> None:
    """The zygote's loop: fork on request, report exits, stop when the worker hangs up."""
    import stack.cli  # noqa: F401 - the point of the zygote: import once, before any fork
    from stack.kinds import KINDS

    for kind in KINDS.values():
        # Runner modules import heavy libraries (torch, numpy) inside run(), not at
        # module level, so loading them all here stays cheap.
        try:
            kind.load_runner()
        except Exception as exc:
            print(f"zygote: cannot preload {kind.name}: {exc}", file=sys.stderr)
    die_with_parent()
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    parent = os.getpid()
    children: set[int] = set()

    def send(message: dict) -> None:
        sock.send(json.dumps(message).encode())

    while True:
        readable, _, _ = select.select([sock, wake_r], [], [])
        if wake_r in readable:
            os.read(wake_r, 4096)
        while children:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            children.discard(pid)
            send({"exited": pid, "status": status})
        if sock not in readable:
            continue
        try:
            message, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, 3)
        except ConnectionResetError:
            message, fds = b"", []
        if not message:
            return  # the worker closed its end: stop (children die with us)
        if len(fds) != 3:
            for fd in fds:
                os.close(fd)
            send({"error": f"expected 3 file descriptors, got {len(fds)}"})
            continue
        request = json.loads(message)
        pid = os.fork()
        if pid == 0:
            _child(request, fds, parent, [sock.fileno(), wake_r, wake_w])
        for fd in fds:
            os.close(fd)
        children.add(pid)
        send({"started": pid})


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] != "--fd":
        print("usage: python -m stack.zygote --fd N", file=sys.stderr)
        return 2
    sock = socket.socket(fileno=int(argv[1]))
    serve(sock)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
