"""A job's sandbox built in-process by a child of the sandboxed zygote (stack/zygote.py).

It is the sandbox bubblewrap builds, step for step: the worker computes one mount plan
(jobs/executors/sandbox.py, ``mount_plan``) from which it either writes bwrap's command
line or sends the plan, as JSON, to the zygote, whose child performs it here. The child
(root, forked from a zygote that holds no secrets) unshares mount, network, IPC, UTS,
cgroup and pid namespaces and forks again; that grandchild, pid 1 of the new pid
namespace, makes every mount private, builds a tmpfs root from the plan (read-only binds
remounted read-only, nosuid, nodev), mounts /proc for its namespace and a minimal /dev,
pivots into the new root and detaches the old one, sets the job's rlimits, drops the
capability bounding set, takes the job's uid, gid and groups (setgroups, setresgid,
setresuid: a real unprivileged uid, as setpriv gives), clears the remaining capability
sets and sets no_new_privs. Then it checks what it got (``verify``): every uid and gid
the job's, its groups, all five capability sets empty, no_new_privs, namespaces other
than the host's, a root other than the host's. Any step that fails raises SandboxFailed
and the job never starts: the zygote child reports the message and the worker marks the
job errored (fail closed). Only then is the job's code run, in the same process, with the
stack already imported: that is the point (no interpreter start per job).

No Django here: stack/ runs inside sandboxes and containers that have none.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import resource
import stat

from stack import seccomp

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
NAMESPACES = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWPID

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_BIND = 4096
MS_REC = 16384
MS_SILENT = 32768
MS_PRIVATE = 1 << 18
MS_RELATIME = 1 << 21
MNT_DETACH = 2
# statvfs f_flag bits → the mount flags a bind remount must keep
_KEPT_FLAGS = {1: MS_RDONLY, 2: MS_NOSUID, 4: MS_NODEV, 8: MS_NOEXEC, 1024: MS_NOATIME}
_KEPT_FLAGS |= {2048: MS_NODIRATIME, 4096: MS_RELATIME}

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
_SYSCALLS = {
    "x86_64": {"pivot_root": 155, "capset": 126},
    "aarch64": {"pivot_root": 41, "capset": 91},
}

# The scratch tmpfs the new root is assembled on, mounted over /tmp in the job's own mount
# namespace only (the host's /tmp is untouched); its first pivot makes the host's root
# /oldroot, the second leaves only /newroot. bwrap does the same.
BASE = "/tmp"  # noqa: S108
DEV_NODES = ("null", "zero", "full", "random", "urandom", "tty")
PROC_READ_ONLY = ("sys", "sysrq-trigger", "irq", "bus")
STATUS_ZERO = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")
HOST_NAMESPACES = ("mnt", "net", "pid", "ipc", "uts")

_libc = ctypes.CDLL(None, use_errno=True)  # loaded once, in the zygote, before any fork
_libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_char_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
_libc.unshare.argtypes = [ctypes.c_int]
_libc.prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
_libc.syscall.restype = ctypes.c_long


class SandboxFailed(Exception):
    """A step of building the sandbox did not take: the job must not start."""


def _fail(what: str) -> SandboxFailed:
    return SandboxFailed(f"{what}: {os.strerror(ctypes.get_errno())}")


def _b(text: str | None) -> bytes | None:
    return None if text is None else os.fsencode(text)


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    if _libc.mount(_b(source), _b(target), _b(fstype), flags, _b(data) if data else None):
        raise _fail(f"mount {source or fstype} on {target}")


def _umount(target: str) -> None:
    if _libc.umount2(_b(target), MNT_DETACH):
        raise _fail(f"umount {target}")


def _prctl(option: int, arg: int = 0) -> None:
    if _libc.prctl(option, arg, 0, 0, 0):
        raise _fail(f"prctl({option}, {arg})")


def _syscall(name: str, *args: object) -> int:
    number = _SYSCALLS.get(platform.machine(), {}).get(name)
    if number is None:
        raise SandboxFailed(f"no {name} system call number for {platform.machine()}")
    return _libc.syscall(ctypes.c_long(number), *args)


def die_with_parent() -> None:
    _prctl(PR_SET_PDEATHSIG, 9)


def host_facts() -> dict:
    """What the host looks like from the zygote's child, to prove the sandbox differs."""
    with open("/proc/sys/kernel/cap_last_cap") as handle:
        last_cap = int(handle.read())
    root = os.stat("/")
    return {
        "namespaces": {n: os.stat(f"/proc/self/ns/{n}").st_ino for n in HOST_NAMESPACES},
        "root": [root.st_dev, root.st_ino],
        "last_cap": last_cap,
    }


def unshare_namespaces() -> None:
    """New mount, network, IPC, UTS, pid (for the next child) and cgroup namespaces."""
    if _libc.unshare(NAMESPACES | CLONE_NEWCGROUP) == 0:
        return
    if ctypes.get_errno() != errno.EINVAL:  # as bwrap's --unshare-cgroup-try
        raise _fail("unshare")
    if _libc.unshare(NAMESPACES):
        raise _fail("unshare")


def apply_limits(
    processes: int, address_space: int | None, file_size: int, cpu_seconds: int
) -> None:
    """A sandboxed job's rlimits (both ways of starting one set these)."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))  # counted per uid
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds))
    if address_space:
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))


def _ensure_dir(path: str, mode: int = 0o755) -> None:
    if not os.path.isdir(path):
        _ensure_dir(os.path.dirname(path), 0o755)
        os.mkdir(path)
        os.chmod(path, mode)


def _ensure_file(path: str) -> None:
    _ensure_dir(os.path.dirname(path))
    if not os.path.lexists(path):
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o444))


def _unescape(field: str) -> str:
    return (
        field.replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\012", "\n")
        .replace("\\134", "\\")
    )


def _mounts_at_or_under(dest: str) -> list[str]:
    with open("/oldroot/proc/self/mountinfo") as handle:
        points = [_unescape(line.split()[4]) for line in handle]
    return [p for p in points if p == dest or p.startswith(dest.rstrip("/") + "/")]


def _remount(path: str, flags: int) -> None:
    current = os.statvfs(path).f_flag
    kept = 0
    for bit, flag in _KEPT_FLAGS.items():
        if current & bit:
            kept |= flag
    _mount(None, path, None, MS_REMOUNT | MS_BIND | MS_SILENT | kept | flags)


def _bind(source: str, dest: str, flags: int) -> None:
    """Bind ``source`` (under /oldroot) on ``dest`` and remount it and its submounts."""
    _mount(source, dest, None, MS_BIND | MS_REC | MS_SILENT)
    for point in _mounts_at_or_under(dest):
        _remount(point, flags)


def _dev(dest: str) -> None:
    """bwrap's --dev: a tmpfs holding the harmless nodes, its own devpts, and links."""
    _ensure_dir(dest)
    _mount("tmpfs", dest, "tmpfs", MS_NOSUID | MS_NODEV | MS_SILENT, "mode=0755")
    for node in DEV_NODES:
        _ensure_file(f"{dest}/{node}")
        _bind(f"/oldroot/dev/{node}", f"{dest}/{node}", MS_NOSUID)
    for number, name in enumerate(("stdin", "stdout", "stderr")):
        os.symlink(f"/proc/self/fd/{number}", f"{dest}/{name}")
    os.symlink("/proc/self/fd", f"{dest}/fd")
    os.symlink("/proc/kcore", f"{dest}/core")
    os.mkdir(f"{dest}/shm", 0o755)
    os.mkdir(f"{dest}/pts", 0o755)
    _mount(
        "devpts",
        f"{dest}/pts",
        "devpts",
        MS_NOSUID | MS_NOEXEC | MS_SILENT,
        "newinstance,ptmxmode=0666,mode=620",
    )
    os.symlink("pts/ptmx", f"{dest}/ptmx")


def _step(step: dict) -> None:
    kind, dest = step["kind"], "/newroot" + step["dest"]
    if kind == "tmpfs":
        _ensure_dir(dest)
        options = f"mode={step['mode']:o},size={step['size']}"
        _mount("tmpfs", dest, "tmpfs", MS_NOSUID | MS_NODEV | MS_SILENT, options)
    elif kind == "proc":
        _ensure_dir(dest)
        _mount("proc", dest, "proc", MS_NOSUID | MS_NOEXEC | MS_NODEV | MS_SILENT)
        for name in PROC_READ_ONLY:  # as bwrap: what could change the host, read-only
            if os.path.exists(f"{dest}/{name}"):
                _bind(f"{dest}/{name}", f"{dest}/{name}", MS_RDONLY | MS_NOSUID | MS_NODEV)
    elif kind == "dev":
        _dev(dest)
    elif kind == "dir":
        _ensure_dir(dest, step["mode"])
    elif kind == "symlink":
        _ensure_dir(os.path.dirname(dest))
        os.symlink(step["source"], dest)
    elif kind == "bind":
        source = "/oldroot" + step["source"]
        if not os.path.exists(source):
            if step["optional"]:
                return
            raise SandboxFailed(f"cannot bind {step['source']}: it does not exist")
        if os.path.isdir(source):
            _ensure_dir(dest)
        else:
            _ensure_file(dest)
        flags = MS_NOSUID | (0 if step["devices"] else MS_NODEV)
        _bind(source, dest, flags | (MS_RDONLY if step["read_only"] else 0))
    else:
        raise SandboxFailed(f"unknown sandbox step {kind!r}")


def _pivot_root(new: str, old: str) -> None:
    if _syscall("pivot_root", _b(new), _b(old)):
        raise _fail(f"pivot_root {new}")


def _resolved(plan: list[dict]) -> list[dict]:
    """Bind sources with their links resolved on the host, as bwrap resolves them (after
    the first pivot an absolute link would point into the scratch root)."""
    steps = []
    for step in plan:
        if step["kind"] == "bind" and os.path.exists(step["source"]):
            step = {**step, "source": os.path.realpath(step["source"])}
        steps.append(step)
    return steps


def build_root(plan: list[dict]) -> None:
    """Make the plan's root this mount namespace's root; nothing of the host's remains."""
    plan = _resolved(plan)
    _mount(None, "/", None, MS_REC | MS_PRIVATE | MS_SILENT)
    _mount("tmpfs", BASE, "tmpfs", MS_NOSUID | MS_NODEV | MS_SILENT, "mode=0755")
    os.chdir(BASE)
    os.mkdir("newroot", 0o755)
    os.mkdir("oldroot", 0o755)
    _pivot_root(".", "oldroot")
    os.chdir("/")
    _mount("newroot", "newroot", None, MS_BIND | MS_REC | MS_SILENT)
    for step in plan:
        try:
            _step(step)
        except OSError as exc:
            raise SandboxFailed(f"{step['kind']} {step['dest']}: {exc}") from exc
    _umount("/oldroot")
    old = os.open("/", os.O_DIRECTORY | os.O_RDONLY)
    try:
        os.chdir("/newroot")
        _pivot_root(".", ".")
        os.fchdir(old)
        _umount(".")
    finally:
        os.close(old)
    os.chdir("/")


def _capset_zero() -> None:
    header = (ctypes.c_uint32 * 2)(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()
    if _syscall("capset", ctypes.byref(header), ctypes.byref(data)):
        raise _fail("capset")


def drop_privileges(uid: int, gid: int, groups: list[int], last_cap: int) -> None:
    """Become the job's uid with nothing of root's left, as setpriv does."""
    for cap in range(last_cap + 1):
        _prctl(PR_CAPBSET_DROP, cap)
    os.setgroups(groups)
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    _capset_zero()  # the inheritable set survives a uid change
    _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    _prctl(PR_SET_NO_NEW_PRIVS, 1)
    # A uid change leaves the process undumpable: its /proc/self files root's, so the job
    # could not read its own environ or fds. After setpriv's exec it would be dumpable
    # again; be the same (only the job's own uid, inside its own pid namespace, gains).
    _prctl(PR_SET_DUMPABLE, 1)


def verify(uid: int, gid: int, groups: list[int], facts: dict) -> None:
    """Check from inside that every step took (the kernel's own account, /proc/self)."""
    problems = []
    if uid == 0 or os.getuid() == 0 or os.geteuid() == 0:
        problems.append("the job would run as root")
    with open("/proc/self/status") as handle:
        status = dict(line.rstrip("\n").split(":\t", 1) for line in handle if ":\t" in line)
    if status.get("Uid", "").split() != [str(uid)] * 4:
        problems.append(f"uids are {status.get('Uid')!r}, not {uid}")
    if status.get("Gid", "").split() != [str(gid)] * 4:
        problems.append(f"gids are {status.get('Gid')!r}, not {gid}")
    if sorted(int(g) for g in status.get("Groups", "").split()) != sorted(groups):
        problems.append(f"groups are {status.get('Groups')!r}, not {groups}")
    for name in STATUS_ZERO:
        if int(status.get(name, "1"), 16) != 0:
            problems.append(f"{name} is {status.get(name)}, not 0")
    if status.get("NoNewPrivs", "").strip() != "1":
        problems.append("no_new_privs is not set")
    if status.get("Seccomp", "").strip() != "2":
        problems.append("no seccomp filter is loaded")
    for name, host in facts["namespaces"].items():
        if os.stat(f"/proc/self/ns/{name}").st_ino == host:
            problems.append(f"the {name} namespace is the host's")
    root = os.stat("/")
    if [root.st_dev, root.st_ino] == facts["root"] or os.path.lexists("/oldroot"):
        problems.append("the root is the host's")
    if problems:
        raise SandboxFailed("; ".join(problems))


def enter(box: dict, facts: dict) -> None:
    """In pid 1 of the new namespaces: build the root, take the job's identity, check."""
    mask = os.umask(0o022)
    build_root(box["plan"])
    os.chdir(box["chdir"])
    if not stat.S_ISDIR(os.stat(".").st_mode):
        raise SandboxFailed(f"cannot enter {box['chdir']}")
    apply_limits(**box["limits"])
    drop_privileges(box["uid"], box["gid"], list(box["groups"]), facts["last_cap"])
    try:
        seccomp.load()  # as bwrap's --seccomp: no user namespace of its own, no keyrings …
    except seccomp.SeccompError as exc:
        raise SandboxFailed(str(exc)) from exc
    verify(box["uid"], box["gid"], list(box["groups"]), facts)
    os.umask(mask)
