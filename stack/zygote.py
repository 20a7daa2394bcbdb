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

The zygote is a fresh interpreter started by the worker, never a fork of the worker: no
database password or secret key is in its memory. Nor does it read requests: it forks a
child as soon as one is waiting, and that child receives it, so no job's paths or
environment are ever in the memory later children are forked from. The zygote runs no
job code.

Sandboxed (``--sandboxed``; ROCPATH_LOCAL_SANDBOX_RUNNER=zygote, jobs/executors/local.py)
it is started with an environment of its own (no job's) and each job gets the sandbox
bwrap would give it, built by the child itself (stack/sandbox.py) from the mount plan in
the request: the child unshares its namespaces and forks the runner as pid 1 of a new pid
namespace, which builds its root, takes the job's uid and checks all of it before the
job's code or parameters are touched; the child stays outside (as bwrap's own process
does), forwards SIGTERM and exits as the runner did. A step that fails is reported on a
status pipe and the job never starts. Unsandboxed, children of one zygote share its uid,
files and /proc, which is why that mode is only for workers that run no team's code.

Protocol (SOCK_SEQPACKET, one JSON object per message):
  worker → zygote  {"argv": [...], "env": {...}, "cwd": "...", "memory_limit": int|null,
                    "cgroup": "<the job's cgroup.procs>"|null}
                   with three fds attached: stdin, stdout, stderr for the child; argv is
                   what follows ``python`` (``-m stack run …``, ``-m mod …``, ``-c code …``).
                   Sandboxed also "sandbox": {"plan", "uid", "gid", "groups", "chdir",
                   "limits"} and a fourth fd, the status pipe ("ready", or why not)
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
import time
from collections.abc import Callable
from typing import NoReturn

from stack import cgroup
from stack.tools import make_die_with_parent

MAX_MESSAGE = 1 << 20
SANDBOX_FAILED = 71  # exit status of a child whose sandbox could not be built

_DIE_WITH_PARENT = make_die_with_parent()  # libc loaded once, before any fork


def die_with_parent() -> None:
    """Ask the kernel to SIGKILL this process when its parent exits (Linux)."""
    if _DIE_WITH_PARENT is not None:
        _DIE_WITH_PARENT()


def _reset_signals(sigpipe: signal.Handlers) -> None:
    signal.set_wakeup_fd(-1)
    for signum in (signal.SIGCHLD, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGPIPE, sigpipe)
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _become_session(parent: int) -> None:
    os.setsid()
    die_with_parent()
    if os.getppid() != parent:  # the zygote died between fork() and prctl()
        os._exit(70)


def run_python(argv: list[str]) -> int:
    """Do what ``python ARGV...`` would, in this process: ``-m stack …``, ``-m mod``, ``-c``."""
    if argv[:2] == ["-m", "stack"]:
        from stack.cli import main

        sys.argv = ["python -m stack", *argv[2:]]
        return main(argv[2:])
    if len(argv) >= 2 and argv[0] == "-m":
        import runpy

        sys.argv = [argv[1], *argv[2:]]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return 0
    if len(argv) >= 2 and argv[0] == "-c":
        sys.argv = ["-c", *argv[2:]]
        exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__"})  # noqa: S102
        return 0
    print(f"zygote: cannot run python {' '.join(argv[:2])}", file=sys.stderr)
    return 2


def _finish(run: Callable[[], int]) -> NoReturn:
    code = 70
    try:
        code = run()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # the pipe may be gone; exit regardless
                stream.flush()
        os._exit(code)


def _job_process(request: dict) -> None:
    """The job's process state, as a fresh interpreter would have it (its env, its seed)."""
    os.environ.clear()
    os.environ.update(request["env"])
    import tempfile

    tempfile.tempdir = None  # TMPDIR is the job's now
    if "random" in sys.modules:
        sys.modules["random"].seed()  # children must not share the zygote's sequence


def _child(request: dict, fds: list[int], parent: int) -> NoReturn:
    """Unsandboxed: become the job's runner process (its group, env, limits), then run it."""

    def run() -> int:
        if request.get("cgroup"):  # first: nothing of the job runs outside its group
            cgroup.join(request["cgroup"])
        _become_session(parent)
        for target, fd in zip((0, 1, 2), fds, strict=True):
            os.dup2(fd, target)
        _close_from(3)
        _reset_signals(signal.SIG_DFL)
        os.chdir(request["cwd"])
        _job_process(request)
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if request.get("memory_limit"):
            limit = int(request["memory_limit"])
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        return run_python(request["argv"])

    _finish(run)


def _close_from(low: int) -> None:
    os.closerange(low, resource_nofile())


def resource_nofile() -> int:
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return max(soft, 1024) if hard == resource.RLIM_INFINITY else hard


def _report(status: int, message: str) -> None:
    with contextlib.suppress(OSError):
        os.write(status, message.encode("utf-8", "replace")[:60000])
        os.close(status)


def _sandboxed_child(request: dict, fds: list[int], parent: int) -> NoReturn:
    """Sandboxed: build the job's own namespaces, fork its pid 1, wait for it, mirror its end.

    This process stays root and outside the new pid namespace (as bwrap's own process
    does) and runs nothing of the job: it forwards SIGTERM to the runner and exits as it
    did. The runner builds the sandbox (stack/sandbox.py) before touching the job.
    """
    from stack import sandbox

    _become_session(parent)
    for target, fd in zip((0, 1, 2), fds[:3], strict=True):
        os.dup2(fd, target)
    os.dup2(fds[3], 3)
    _close_from(4)
    status = 3
    _reset_signals(signal.SIG_IGN)  # SIGPIPE ignored, as in a fresh interpreter
    try:
        if request.get("cgroup"):  # before the namespaces: the job's cgroup is its root
            cgroup.join(request["cgroup"])
        box = request["sandbox"]
        facts = sandbox.host_facts()
        sandbox.unshare_namespaces()
        life_r, life_w = os.pipe()
        runner = os.fork()
    except Exception as exc:
        _report(status, f"{type(exc).__name__}: {exc}")
        os._exit(SANDBOX_FAILED)
    if runner == 0:
        os.close(life_w)
        _sandboxed_runner(request, box, facts, status, life_r)
    os.close(status)
    os.close(life_r)
    signal.signal(signal.SIGTERM, lambda *_: os.kill(runner, signal.SIGTERM))
    while True:
        try:
            _, wait_status = os.waitpid(runner, 0)
            break
        except InterruptedError:
            continue
    if os.WIFSIGNALED(wait_status):
        sig = os.WTERMSIG(wait_status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(wait_status))


def _sandboxed_runner(request: dict, box: dict, facts: dict, status: int, life_r: int) -> NoReturn:
    from stack import sandbox

    try:
        sandbox.die_with_parent()
        readable, _, _ = select.select([life_r], [], [], 0)
        if readable:  # its parent (outside the namespace) is already gone
            os._exit(SANDBOX_FAILED)
        os.setsid()  # as bwrap's --new-session
        sandbox.enter(box, facts)
        # Taking the job's uid cleared the parent-death signal (the kernel drops it when
        # credentials change): armed again, or a SIGKILL to the child outside (the out
        # folder's watch, a job deaf to SIGTERM) left this runner running on its own.
        sandbox.die_with_parent()
        readable, _, _ = select.select([life_r], [], [], 0)
        if readable:  # its parent died in between
            os._exit(SANDBOX_FAILED)
        os.close(life_r)
    except BaseException as exc:
        _report(
            status,
            f"{type(exc).__name__}: {exc}"
            if not isinstance(exc, sandbox.SandboxFailed)
            else str(exc),
        )
        os._exit(SANDBOX_FAILED)
    _job_process(request)
    sys.dont_write_bytecode = True  # the stack code is read-only
    os.write(status, b"ready")
    os.close(status)
    _finish(lambda: run_python(request["argv"]))


def _take(sock: socket.socket, taken: int, parent: int, sandboxed: bool) -> NoReturn:
    """In a fresh child of the zygote: receive one request (the zygote never reads one)."""
    want = 4 if sandboxed else 3
    try:
        message, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, want)
        sock.close()
        if len(fds) != want:
            raise ValueError(f"expected {want} file descriptors, got {len(fds)}")
        request = json.loads(message)
    except Exception as exc:
        os.write(taken, f"bad request: {exc}".encode())
        os._exit(2)
    os.write(taken, b"ok")
    os.close(taken)
    if sandboxed:
        _sandboxed_child(request, fds, parent)
    _child(request, fds, parent)


def serve(sock: socket.socket, sandboxed: bool = False) -> None:
    """The zygote's loop: fork on request, report exits, stop when the worker hangs up.

    Each request is read by the child forked for it, not by the zygote: a job's request
    (its paths, its environment) is never in the memory later children are forked from.
    """
    import stack.cli  # the point of the zygote: import once, before any fork
    import stack.sandbox  # noqa: F401 - libc and its prototypes, before any fork
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
            waiting = sock.recv(1, socket.MSG_PEEK)
        except ConnectionResetError:
            waiting = b""
        if not waiting:
            return  # the worker closed its end: stop (children die with us)
        taken_r, taken_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(taken_r)
            for fd in (wake_r, wake_w):
                os.close(fd)
            _take(sock, taken_w, parent, sandboxed)
        os.close(taken_w)
        answer = read_until_closed(taken_r, timeout=10.0)
        if answer == b"ok":
            children.add(pid)
            send({"started": pid})
        else:
            os.waitpid(pid, 0)
            send({"error": answer.decode("utf-8", "replace") or "the zygote's child died"})


def read_until_closed(fd: int, timeout: float) -> bytes:
    """All a child wrote on a pipe until it closed its end, or ``timeout`` s passed; closes fd.

    A child set up for a job reports on a pipe of its own ("ok" / "ready", or why not):
    the zygote reads its forked child's answer with it, the worker its sandboxed runner's.
    """
    data = b""
    deadline = time.monotonic() + timeout
    try:
        while (left := deadline - time.monotonic()) > 0:
            if not select.select([fd], [], [], left)[0]:
                break
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            data += chunk
    finally:
        os.close(fd)
    return data


def main(argv: list[str]) -> int:
    sandboxed = argv[2:] == ["--sandboxed"]
    if len(argv) not in (2, 3) or argv[0] != "--fd" or (len(argv) == 3 and not sandboxed):
        print("usage: python -m stack.zygote --fd N [--sandboxed]", file=sys.stderr)
        return 2
    sock = socket.socket(fileno=int(argv[1]))
    serve(sock, sandboxed)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
