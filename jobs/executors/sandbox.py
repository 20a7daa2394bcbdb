"""The bubblewrap sandbox a local runner runs in: what it sees, who it is, what it may take.

A runner runs a team's parameters over a team's code (compile-check runs hipcc on it), so
on the host it must reach nothing but its own job. ``bwrap`` (Debian's bubblewrap) builds
a root of its own for it: the stack code, the interpreter and the tools read-only, the
job's inputs read-only, its out folder (and its project's cache) writable, a private
sized /tmp, a /proc of its own pid namespace, a minimal /dev (GPU nodes only for jobs
leased GPUs), no network, no IPC or UTS shared with the host. Nothing else of the host
is mounted: not the secret-key file, the database, var/, other jobs' folders, /etc.

The runner gets a uid no account has (ROCPATH_SANDBOX_UID + a slot): bwrap runs as root
without a user namespace and ``setpriv`` switches to that uid before the interpreter
starts, so its file access is really that uid's (a uid mapped inside a user namespace
made by root would still be root outside and read /etc/shadow). It has no capabilities,
no_new_privs, and rlimits on processes (RLIMIT_NPROC, counted per uid: hence a uid per
project cache rather than one for all), address space, file size and CPU time. It is pid 1
of its namespace (--as-pid-1): when it exits the kernel kills whatever it left, even a
process that called setsid; bwrap dies with the worker (--die-with-parent).

What the sandbox holds is written once, as a mount plan (``mount_plan``: a list of plain
steps). bwrap's command line is made from it, and the sandboxed zygote receives the same
list as JSON and performs it itself (stack/sandbox.py), with the same uid, groups and
rlimits, checking from inside that each took: the same sandbox without an interpreter
start per job.

Over 400 lines: the layout, the mount plan, bwrap's command line from it, the request the
zygote performs and the self-test that proves it starts are one sandbox's definition; kept
in one module so that what one runner gets the other gets too.
"""

from __future__ import annotations

import functools
import glob
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path

from django.conf import settings

from jobs.executors.base import ExecutorError, JobSpec
from stack import cgroup
from stack.sandbox import apply_limits

MIB = 1024 * 1024
# The sandbox's own tmpfs, not the host's /tmp (which it never sees).
SANDBOX_TMP = "/tmp"  # noqa: S108

# Host files under /etc that the runner and its tools need (dynamic linking, time zone,
# the OS name the probe reports); the rest of /etc (passwd, shadow, ssh, ...) stays out.
ETC_FILES = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/localtime",
    "/etc/os-release",
    "/etc/debian_version",
)
# Read-only tool folders beside /usr: rocpath's own tools and the ROCm / CUDA installs.
TOOL_DIRS = ("/opt/rocpath-tools", "/opt/rocm", "/opt/rocm-*", "/opt/cuda*")
# /sys parts every job may read (CPU topology for the probe and the BLAS cases) and the
# parts a GPU job's runtime needs. /sys/class/net is never shown: it would list the host's
# interfaces inside a namespace that has none.
SYS_DIRS = ("/sys/devices/system/cpu", "/sys/devices/system/node")
GPU_SYS_DIRS = ("/sys/devices", "/sys/bus", "/sys/class/drm", "/sys/class/kfd", "/sys/module")
GPU_NODES = {
    "amd": ("/dev/kfd", "/dev/dri"),
    "nvidia": ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia[0-9]*"),
}


@dataclass(frozen=True)
class Limits:
    """What one sandboxed job may take, as rlimits set before bwrap starts."""

    processes: int
    address_space: int | None
    file_size: int
    cpu_seconds: int

    def apply(self) -> None:
        """In the child, between fork and exec: inherited by bwrap and the runner.

        RLIMIT_NPROC is not counted for bwrap (root); it is once setpriv has switched to
        the job's uid. The sandboxed zygote's child sets the same (stack/sandbox.py).
        """
        apply_limits(**asdict(self))


@dataclass
class Layout:
    """What a sandbox shows: (source, destination) pairs by kind, and the runner's identity."""

    uid: int
    gid: int
    chdir: str
    read_only: list[tuple[str, str]] = field(default_factory=list)
    writable: list[tuple[str, str]] = field(default_factory=list)
    devices: list[str] = field(default_factory=list)
    groups: list[int] = field(default_factory=list)
    gpu: bool = False


def sandbox_uid(spec: JobSpec) -> int:
    """The job's uid: one per project cache (its jobs share the cache's files), else per job.

    Two projects may land on one uid when the range is smaller than the projects running
    at once; they then share RLIMIT_NPROC only, never files (neither sees the other's).
    """
    key = zlib.crc32(str(spec.cache_dir).encode()) if spec.cache_dir else spec.job_id
    return settings.ROCPATH_SANDBOX_UID + key % settings.ROCPATH_SANDBOX_UIDS


def memory_limit(spec: JobSpec) -> int:
    """What all of a local job's processes may hold together: what it asked, at most the
    worker's cap (ROCPATH_LOCAL_MEMORY_MB, by default three quarters of the host's)."""
    cap = settings.ROCPATH_LOCAL_MEMORY_MB * MIB
    return min(spec.memory_limit_bytes or cap, cap)


def memory_group(spec: JobSpec) -> tuple[cgroup.JobGroup | None, str]:
    """The job's memory cgroup, made and empty; else None and why there is none.

    Without one the job is held per process only (RLIMIT_AS, which counts address space):
    the worker says so in the job's log. ROCPATH_JOB_CGROUP names a delegated folder; one
    that cannot be used is an ExecutorError, never a silent fallback.
    """
    where = settings.ROCPATH_JOB_CGROUP
    if where == "off":
        return None, "ROCPATH_JOB_CGROUP=off"
    try:
        hierarchy = _hierarchy(settings.ROCPATH_DEPLOYMENT, where)
        name = f"job-{spec.job_id}-{spec.attempt}-w{os.getpid()}"
        return cgroup.make(hierarchy, name, memory_limit(spec)), ""
    except cgroup.CgroupError as exc:
        if where != "auto":
            raise ExecutorError(f"the job's memory cgroup could not be made: {exc}") from exc
        return None, str(exc)


@functools.lru_cache(maxsize=4)
def _hierarchy(deployment: str, where: str) -> cgroup.Hierarchy:
    """Found once per worker process; groups its dead predecessors left are removed then."""
    hierarchy = cgroup.find_hierarchy(deployment, where)
    cgroup.sweep(hierarchy)
    return hierarchy


def limits_for(spec: JobSpec, grouped: bool = False) -> Limits:
    """The job's rlimits from the settings, its hardware request clamped to them.

    ``grouped``: a memory cgroup holds the job, so no RLIMIT_AS (it would refuse address
    space, which runtimes reserve far beyond what they use, rather than memory)."""
    memory: int | None = memory_limit(spec)
    if grouped or (spec.hardware.get("gpu_indices") and not spec.memory_limit_bytes):
        memory = None  # GPU runtimes reserve huge address spaces
    cpus = spec.hardware.get("cpus") or settings.HOST_CPUS
    cpus = max(1, min(int(cpus + 0.999), settings.HOST_CPUS))
    pids = settings.ROCPATH_LOCAL_PIDS
    if spec.hardware.get("pids"):
        pids = max(16, min(int(spec.hardware["pids"]), pids))
    return Limits(
        processes=pids,
        address_space=memory,
        file_size=settings.ROCPATH_JOB_MAX_FILE_MB * MIB,
        cpu_seconds=spec.timeout_s * cpus + 60,
    )


def python_roots(python: str) -> list[str]:
    """The folders an interpreter runs from: its virtualenv and the installation behind it."""
    path = Path(python).absolute()
    roots = {path.parent.parent, path.resolve().parent.parent}
    if os.path.realpath(python) == os.path.realpath(sys.executable):
        roots |= {Path(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    return _outermost(str(r) for r in roots)


def _outermost(paths: object) -> list[str]:
    kept: list[str] = []
    for p in sorted(set(paths), key=len):  # type: ignore[arg-type]
        if not any(_under(p, k) for k in kept):
            kept.append(p)
    return kept


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _server_paths() -> list[Path]:
    """Folders the runner must never see whole: they hold the server's secrets and data."""
    found = [Path(settings.BASE_DIR), Path(settings.VAR_DIR), Path(settings.ARTIFACT_ROOT)]
    name = str(settings.DATABASES["default"].get("NAME") or "")
    if name.startswith("/"):
        found.append(Path(name))
    return [p.resolve() for p in found]


def _check_roots(roots: list[str]) -> str | None:
    for root in roots:
        resolved = Path(root).resolve()
        if resolved == Path("/"):
            return f"the interpreter's folder {root} is the whole file system"
        for server in _server_paths():
            if server == resolved or server.is_relative_to(resolved):
                return f"the interpreter's folder {root} holds the server's files ({server})"
    return None


def gpu_nodes(hardware: dict) -> list[str]:
    """The device nodes of a job leased GPUs (none for others); all of the vendor's, since
    node numbers need not follow GPU indices: which GPUs it uses, visible_devices says."""
    if not hardware.get("gpu_indices"):
        return []
    nodes: list[str] = []
    for pattern in GPU_NODES.get(hardware.get("gpu_vendor") or "", ()):
        nodes.extend(sorted(glob.glob(pattern)))
    return nodes


def _node_groups(nodes: list[str]) -> list[int]:
    """The groups that own the device nodes (render, video): the job's supplementary groups."""
    gids: set[int] = set()
    for node in nodes:
        for path in [node, *glob.glob(os.path.join(node, "*"))]:
            try:
                gids.add(os.stat(path).st_gid)
            except OSError:
                continue
    gids.discard(0)
    return sorted(gids)


def layout_for(spec: JobSpec, python: str, base_dir: Path) -> Layout:
    """What the job's sandbox shows, under the host's own paths (logs and summaries match)."""
    uid = sandbox_uid(spec)
    layout = Layout(uid=uid, gid=uid, chdir=str(spec.job_dir), gpu=bool(gpu_nodes(spec.hardware)))
    ro = layout.read_only
    for root in python_roots(python):
        if not _under(root, "/usr"):  # /usr is there already
            ro.append((root, root))
    stack = str(base_dir / "stack")
    ro.append((stack, stack))
    ro.append((str(spec.params_file), str(spec.params_file)))
    ro.append((str(spec.work_dir), str(spec.work_dir)))
    for name, path in spec.inputs.items():
        ro.append((str(path), str(spec.work_dir / name)))
    layout.writable.append((str(spec.out_dir), str(spec.out_dir)))
    if spec.cache_dir is not None:
        layout.writable.append((str(spec.cache_dir), str(spec.cache_dir)))
    layout.devices = gpu_nodes(spec.hardware)
    layout.groups = _node_groups(layout.devices)
    return layout


@dataclass(frozen=True)
class Mount:
    """One step of building a sandbox's root, in order: the one description of what it holds.

    Both ways of starting a sandbox are built from the same list: ``bwrap_argv`` turns each
    step into bwrap options, and the sandboxed zygote (stack/sandbox.py) performs them itself,
    receiving the list as JSON (``asdict``). kind: ``tmpfs`` (``mode``, ``size`` bytes),
    ``proc``, ``dev`` (bwrap's minimal /dev), ``bind`` (``read_only``; ``optional``: skipped
    when the source is missing; ``devices``: device nodes usable), ``symlink`` (``source`` is
    the link's target) or ``dir`` (an empty folder of the sandbox's own root, ``mode``).
    """

    kind: str
    dest: str
    source: str | None = None
    read_only: bool = False
    optional: bool = False
    devices: bool = False
    mode: int | None = None
    size: int | None = None


def mount_plan(layout: Layout) -> list[Mount]:
    """Every step that builds ``layout``'s sandbox root, in the order they must run."""
    tmp_bytes = settings.ROCPATH_LOCAL_TMP_MB * MIB
    plan = [
        # a private /tmp first: a job folder under the host's /tmp is bound on top of it
        Mount("tmpfs", SANDBOX_TMP, mode=0o1777, size=tmp_bytes),
        Mount("proc", "/proc"),
        Mount("dev", "/dev"),
        Mount("tmpfs", "/dev/shm", mode=0o1777, size=tmp_bytes),  # noqa: S108
        Mount("bind", "/usr", "/usr", read_only=True),
    ]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            plan.append(Mount("symlink", top, os.readlink(top)))
        elif os.path.isdir(top):
            plan.append(Mount("bind", top, top, read_only=True))
    binds = [Mount("bind", p, p, read_only=True, optional=True) for p in ETC_FILES]
    for pattern in TOOL_DIRS:
        binds += [Mount("bind", p, p, read_only=True) for p in sorted(glob.glob(pattern))]
    for var in ("ROCM_PATH", "HIP_PATH", "CUDA_HOME"):
        path = os.path.realpath(os.environ.get(var) or "/usr")
        if os.path.isdir(path) and not _under(path, "/usr"):
            binds.append(Mount("bind", path, path, read_only=True))
    for p in GPU_SYS_DIRS if layout.gpu else SYS_DIRS:
        binds.append(Mount("bind", p, p, read_only=True, optional=True))
    binds += [Mount("bind", dest, source, read_only=True) for source, dest in layout.read_only]
    binds += [Mount("bind", dest, source) for source, dest in layout.writable]
    binds += [Mount("bind", node, node, devices=True) for node in layout.devices]
    # bwrap makes missing parents of a destination mode 0700, which the job's uid could not
    # pass through: make them first, 0755 (empty folders of the sandbox's own root).
    parents = {str(p) for m in binds for p in Path(m.dest).parents if str(p) != "/"}
    for parent in sorted(parents, key=lambda p: (p.count("/"), p)):
        if not any(_under(parent, top) for top in ("/usr", "/proc", "/dev")):
            plan.append(Mount("dir", parent, mode=0o755))
    return plan + binds


def _bwrap_options(step: Mount) -> list[str]:
    if step.kind == "tmpfs":
        return ["--perms", f"{step.mode:o}", "--size", str(step.size), "--tmpfs", step.dest]
    if step.kind in ("proc", "dev"):
        return [f"--{step.kind}", step.dest]
    if step.kind == "dir":
        return ["--perms", f"{step.mode:04o}", "--dir", step.dest]
    if step.kind == "symlink":
        return ["--symlink", str(step.source), step.dest]
    if step.kind == "bind":
        op = "--dev-bind" if step.devices else "--ro-bind" if step.read_only else "--bind"
        return [op + ("-try" if step.optional else ""), str(step.source), step.dest]
    raise ValueError(f"unknown sandbox step {step.kind!r}")


def bwrap_argv(
    bwrap: str, setpriv: str, layout: Layout, command: list[str], seccomp_fd: int | None = None
) -> list[str]:
    """The bwrap command line that runs ``command`` in ``layout``'s sandbox.

    ``seccomp_fd``: a descriptor bwrap reads stack.seccomp's compiled filter from.
    """
    argv = [
        bwrap,
        "--die-with-parent",
        "--new-session",
        "--as-pid-1",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-net",
        "--unshare-uts",
        "--unshare-cgroup-try",
    ]
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    for step in mount_plan(layout):
        argv += _bwrap_options(step)
    argv += ["--chdir", layout.chdir, "--", setpriv]
    argv += [f"--reuid={layout.uid}", f"--regid={layout.gid}"]
    if layout.groups:
        argv.append("--groups=" + ",".join(str(g) for g in layout.groups))
    else:
        argv.append("--clear-groups")
    argv += ["--no-new-privs", "--inh-caps=-all", "--bounding-set=-all", "--", *command]
    return argv


def sandbox_request(layout: Layout, limits: Limits) -> dict:
    """What the sandboxed zygote needs to build the same sandbox itself (JSON-able)."""
    return {
        "plan": [asdict(step) for step in mount_plan(layout)],
        "uid": layout.uid,
        "gid": layout.gid,
        "groups": layout.groups,
        "chdir": layout.chdir,
        "limits": asdict(limits),
    }


def own(path: Path, uid: int, gid: int) -> None:
    """Give a folder the job writes (out, its cache) and what it holds to the job's uid.

    Links are not followed (lchown), so a link a job left in its cache changes nothing else.
    """
    os.chown(path, uid, gid)
    for folder, dirs, files in os.walk(path):
        for name in [*dirs, *files]:
            os.lchown(os.path.join(folder, name), uid, gid)


def tools() -> tuple[str | None, str | None]:
    """(bwrap, setpriv) as found on this host."""
    return shutil.which(settings.ROCPATH_BWRAP), shutil.which("setpriv")


def sandbox_problem() -> str | None:
    """Why no sandbox can start on this worker (None: it can); checked once per process."""
    python = settings.ROCPATH_STACK_PYTHON or sys.executable
    return _problem(
        settings.ROCPATH_LOCAL_SANDBOX,
        settings.ROCPATH_BWRAP,
        python,
        str(settings.BASE_DIR),
        settings.ROCPATH_SANDBOX_UID,
    )


@functools.lru_cache(maxsize=8)
def _problem(mode: str, bwrap_name: str, python: str, base_dir: str, uid: int) -> str | None:
    if mode == "off":
        return "the sandbox is turned off (ROCPATH_LOCAL_SANDBOX=off)"
    if os.geteuid() != 0:
        return (
            "the worker does not run as root, and the sandbox needs root to give the runner "
            "a uid of its own"
        )
    bwrap, setpriv = tools()
    if bwrap is None:
        return f"{bwrap_name} not found (Debian package 'bubblewrap')"
    if setpriv is None:
        return "setpriv not found (Debian package 'util-linux')"
    if not os.access(python, os.X_OK):
        return f"the stack interpreter {python} cannot be run"
    problem = _check_roots(python_roots(python))
    if problem:
        return problem
    return _self_test(bwrap, setpriv, python, Path(base_dir), uid)


def _self_test(bwrap: str, setpriv: str, python: str, base_dir: Path, uid: int) -> str | None:
    """Start one sandbox and check from inside that its uid is really unprivileged."""
    with tempfile.TemporaryDirectory(prefix="rocpath-sandbox-test-") as folder:
        secret = Path(folder) / "root-only"
        secret.write_text("not for the sandbox\n")
        secret.chmod(0o600)
        layout = Layout(uid=uid, gid=uid, chdir=SANDBOX_TMP)
        for root in python_roots(python):
            if not _under(root, "/usr"):
                layout.read_only.append((root, root))
        layout.read_only.append((folder, folder))
        code = (
            "import os, sys\n"
            "uid = int(sys.argv[1])\n"
            "assert os.getresuid() == (uid, uid, uid), os.getresuid()\n"
            "try:\n"
            "    open(sys.argv[2]).read()\n"
            "    sys.exit('a root-only file was readable')\n"
            "except PermissionError:\n"
            "    pass\n"
            "assert not os.path.exists('/etc/shadow'), '/etc/shadow is visible'\n"
            "print('sandbox ok')\n"
        )
        argv = bwrap_argv(bwrap, setpriv, layout, [python, "-I", "-c", code, str(uid), str(secret)])
        try:
            run = subprocess.run(
                argv, capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"}
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"bwrap's self-test could not run: {exc}"
    if run.returncode != 0 or "sandbox ok" not in run.stdout:
        detail = (run.stderr or run.stdout).strip().splitlines()[-1:] or [f"exit {run.returncode}"]
        return f"bwrap's self-test failed: {detail[0][:300]}"
    return None


def read_child_pid(fd: int, timeout: float = 10.0) -> int | None:
    """The sandboxed process's pid on the host, from bwrap's --info-fd (closed after)."""
    data = b""
    try:
        while len(data) < 65536:
            ready, _, _ = select.select([fd], [], [], timeout)
            if not ready:
                break
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            data += chunk
            try:
                return int(json.loads(data)["child-pid"])
            except (ValueError, KeyError, TypeError):
                continue  # not all of it yet
    finally:
        os.close(fd)
    try:
        return int(json.loads(data)["child-pid"])
    except (ValueError, KeyError, TypeError):
        return None
