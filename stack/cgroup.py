"""A local job's memory cgroup: one limit for all of the job's processes, as a container has.

RLIMIT_AS holds each process on its own and counts address space, not memory: four
children of 1,200 MiB each ran under a 1,536 MiB cap (5.2 GiB resident for one job). A
cgroup counts what the job's processes hold together, pages they share once, and the
kernel's OOM killer ends the job at its limit, without swap to crawl into.

The worker makes the group (it needs root, or a delegated subtree) before the job starts,
and the job's first process joins it between fork and exec, or before its sandbox is
built: nothing of the job ever runs outside it, and whatever the job starts is inside.
After the job the worker reads whether the OOM killer fired, kills what is left in the
group and removes it.

cgroup v2 (``memory.max``, ``memory.swap.max`` 0, ``memory.oom.group``, ``memory.events``)
where the unified hierarchy has the memory controller; else v1's memory controller
(``memory.limit_in_bytes``, ``memory.memsw.limit_in_bytes``, ``memory.oom_control``), as on
hosts that still mount it. A v2 group is made under the hierarchy's root: a cgroup that
holds processes (the worker's own) cannot hand controllers to children. A v1 group is made
under the worker's own cgroup, so that a limit an operator set on the worker holds its
jobs too. Groups are named by deployment, job and attempt: two rocpaths on one host never
touch each other's.

This module needs no Django: the zygote's children (stack/zygote.py) join groups too.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import time
from dataclasses import dataclass

MOUNTINFO = "/proc/self/mountinfo"
SELF_CGROUP = "/proc/self/cgroup"


class CgroupError(Exception):
    """A group could not be made or removed; the text says which file refused what."""


@dataclass(frozen=True)
class Hierarchy:
    version: int  # 1 or 2
    root: str  # the folder this deployment's groups go under


@dataclass(frozen=True)
class JobGroup:
    """One job attempt's group."""

    path: str
    version: int
    limit: int  # bytes

    @property
    def procs(self) -> str:
        """The file a process writes "0" to, to join (the same name in v1 and v2)."""
        return os.path.join(self.path, "cgroup.procs")

    def oom_kills(self) -> int:
        """How many of the job's processes the OOM killer ended (0 when unreadable)."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        return _field(_read(os.path.join(self.path, name)), "oom_kill")

    def peak(self) -> int | None:
        """The most the job's processes held at once, in bytes (None where the kernel
        does not say: v2 before Linux 5.19)."""
        name = "memory.peak" if self.version == 2 else "memory.max_usage_in_bytes"
        text = _read(os.path.join(self.path, name)).strip()
        return int(text) if text.isdigit() else None

    def pids(self) -> list[int]:
        return [int(p) for p in _read(self.procs).split()]

    def remove(self, timeout: float = 10.0) -> None:
        """Kill whatever the job left in its group, wait for it to be gone, remove the group."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                left = self.pids()
            except FileNotFoundError:
                return
            if not left:
                break
            if self.version == 2 and os.path.exists(os.path.join(self.path, "cgroup.kill")):
                _write(os.path.join(self.path, "cgroup.kill"), "1")
            else:
                for pid in left:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
            if time.monotonic() > deadline:
                raise CgroupError(f"{self.path}: processes {left[:8]} did not end")
            time.sleep(0.02)
        while True:
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError as exc:  # EBUSY while the kernel still frees the last task
                if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                    raise CgroupError(f"could not remove {self.path}: {exc.strerror}") from exc
                time.sleep(0.02)


def join(procs: str) -> None:
    """Move the calling process into the group whose ``cgroup.procs`` this is. Runs in a
    child between fork and exec: plain system calls, no allocation to speak of."""
    fd = os.open(procs, os.O_WRONLY)
    try:
        os.write(fd, b"0")
    finally:
        os.close(fd)


def find_hierarchy(deployment: str, configured: str = "auto") -> Hierarchy:
    """Where this deployment's job groups go, made ready; CgroupError says why there is
    nowhere. ``configured`` is ROCPATH_JOB_CGROUP: "auto", or a folder in a cgroup file
    system the operator delegated to rocpath (its groups go straight under it)."""
    mounts = _cgroup_mounts()
    if configured != "auto":
        root = os.path.realpath(configured)
        for point, version in sorted(mounts.items(), key=lambda m: -len(m[0])):
            if root == point or root.startswith(point + "/"):
                return _ready(Hierarchy(version, root))
        raise CgroupError(f"ROCPATH_JOB_CGROUP={configured}: not in a cgroup file system")
    if os.geteuid() != 0:
        raise CgroupError("the worker is not root (or set ROCPATH_JOB_CGROUP to a delegated one)")
    name = f"rocpath-{deployment}"
    for point, version in mounts.items():
        if version == 2 and "memory" in _read(os.path.join(point, "cgroup.controllers")).split():
            return _ready(Hierarchy(2, os.path.join(point, name)))
    for point, version in mounts.items():
        if version == 1 and os.path.exists(os.path.join(point, "memory.limit_in_bytes")):
            own = _own_v1_memory_path()
            return _ready(Hierarchy(1, os.path.normpath(f"{point}/{own}/{name}")))
    raise CgroupError("no cgroup file system with the memory controller is mounted")


def make(hierarchy: Hierarchy, name: str, limit: int) -> JobGroup:
    """A new group for one job attempt, held to ``limit`` bytes with no swap. A group of
    that name left by a worker that died is emptied and made again."""
    group = JobGroup(os.path.join(hierarchy.root, name), hierarchy.version, limit)
    if os.path.isdir(group.path):
        group.remove()
    try:
        os.mkdir(group.path)
    except OSError as exc:
        raise CgroupError(f"could not make {group.path}: {exc.strerror}") from exc
    try:
        if group.version == 2:
            _write(os.path.join(group.path, "memory.max"), str(limit))
            _write_if_there(os.path.join(group.path, "memory.swap.max"), "0")
            # the OOM killer ends the whole job, not one process the job may outlive
            _write_if_there(os.path.join(group.path, "memory.oom.group"), "1")
        else:
            _write(os.path.join(group.path, "memory.limit_in_bytes"), str(limit))
            # swap accounting where the kernel has it; memsw >= the limit: equal is no swap
            _write_if_there(os.path.join(group.path, "memory.memsw.limit_in_bytes"), str(limit))
            with contextlib.suppress(CgroupError):
                _write_if_there(os.path.join(group.path, "memory.swappiness"), "0")
    except CgroupError:
        with contextlib.suppress(OSError):
            os.rmdir(group.path)
        raise
    return group


def sweep(hierarchy: Hierarchy) -> list[str]:
    """Remove the groups of workers that are gone (names end in "-w<worker pid>"), with
    anything still in them: a worker killed mid-job leaves its job's group behind."""
    removed = []
    with contextlib.suppress(FileNotFoundError):
        for entry in os.scandir(hierarchy.root):
            _, _, worker = entry.name.rpartition("-w")
            if not (entry.is_dir() and entry.name.startswith("job-") and worker.isdigit()):
                continue
            try:
                os.kill(int(worker), 0)
                continue  # its worker is alive: the group is its own business
            except ProcessLookupError:
                pass
            except PermissionError:
                continue
            with contextlib.suppress(CgroupError):
                JobGroup(entry.path, hierarchy.version, 0).remove()
                removed.append(entry.path)
    return removed


def _ready(hierarchy: Hierarchy) -> Hierarchy:
    """The deployment's folder made, and in v2 handing the memory controller down."""
    try:
        if hierarchy.version == 2:
            parent = os.path.dirname(hierarchy.root)
            _enable_memory(parent)
            os.makedirs(hierarchy.root, exist_ok=True)
            _enable_memory(hierarchy.root)
        else:
            os.makedirs(hierarchy.root, exist_ok=True)
    except OSError as exc:
        raise CgroupError(f"could not make {hierarchy.root}: {exc.strerror}") from exc
    return hierarchy


def _enable_memory(folder: str) -> None:
    control = os.path.join(folder, "cgroup.subtree_control")
    if "memory" not in _read(control).split():
        _write(control, "+memory")


def _cgroup_mounts() -> dict[str, int]:
    """Mount point -> version of every cgroup file system (v1 ones with their memory)."""
    found: dict[str, int] = {}
    with contextlib.suppress(OSError):
        for line in _read(MOUNTINFO).splitlines():
            before, _, after = line.partition(" - ")
            fields, kind = before.split(), after.split()
            if not kind or len(fields) < 5:
                continue
            point = fields[4].replace("\\040", " ")
            if kind[0] == "cgroup2":
                found[point] = 2
            elif kind[0] == "cgroup" and "memory" in kind[-1].split(","):
                found[point] = 1
    return found


def _own_v1_memory_path() -> str:
    for line in _read(SELF_CGROUP).splitlines():
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            return path
    return "/"


def _field(text: str, key: str) -> int:
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return int(value)
    return 0


def _read(path: str) -> str:
    try:
        with open(path) as handle:
            return handle.read()
    except FileNotFoundError:
        return ""


def _write(path: str, value: str) -> None:
    try:
        with open(path, "w") as handle:
            handle.write(value)
    except OSError as exc:
        raise CgroupError(f"{path}: writing {value!r} was refused: {exc.strerror}") from exc


def _write_if_there(path: str, value: str) -> None:
    if os.path.exists(path):
        _write(path, value)
