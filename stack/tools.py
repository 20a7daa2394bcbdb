"""Finding and running the external tools that runners drive (rocminfo, amd-smi, ...).

Two promises: a tool that is not installed raises ToolMissing with how to get
it (never a bare FileNotFoundError), and a tool never outlives the runner that
started it (the child gets PR_SET_PDEATHSIG=SIGKILL, so killing the runner
kills its tools even if they ignore the process-group signal).

subprocess is imported inside run_tool: kind modules import this one for its
exceptions, and a job that never runs a tool (noop) should not pay for it.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

# Where each tool comes from, for ToolMissing messages. Debian package names
# are from Debian's archive (bookworm and trixie); ROCm paths from AMD's images.
# These are the host's GPU tools, which several libraries drive (the probe, the
# benchmarks' telemetry); a tool that one kind brings is declared by that kind
# (Kind.install_hints) and registered here with the kind.
INSTALL_HINTS: dict[str, str] = {
    "rocminfo": "Debian package 'rocminfo'; /opt/rocm/bin/rocminfo in the ROCm images",
    "rocm-smi": "Debian package 'rocm-smi'; /opt/rocm/bin/rocm-smi in the ROCm images",
    "amd-smi": (
        "part of ROCm 6 and later (/opt/rocm/bin/amd-smi in rocm/dev-ubuntu-* and "
        "rocm/pytorch images); not packaged by Debian"
    ),
    "nvidia-smi": (
        "installed with the NVIDIA driver (Debian non-free 'nvidia-smi'); in a container "
        "the NVIDIA Container Toolkit mounts it when the job is given GPUs"
    ),
    "nvcc": "a CUDA toolkit (Debian non-free 'nvidia-cuda-toolkit', or an nvidia/cuda devel image)",
    "torch": "pip wheels of PyTorch for ROCm or CUDA, or the rocm/pytorch image",
}


def register_install_hints(hints: Mapping[str, str]) -> None:
    """Add where-to-get-it lines for more tools (the kinds registry calls it per kind).

    A hint already known for a tool is kept: two kinds that drive one tool
    should not race over what its ToolMissing says.
    """
    for tool, hint in hints.items():
        INSTALL_HINTS.setdefault(tool, hint)


PR_SET_PDEATHSIG = 1


class ToolError(Exception):
    """A tool could not be run to completion."""

    def __init__(self, tool: str, message: str) -> None:
        super().__init__(message)
        self.tool = tool


class ToolMissing(ToolError):
    """The tool is not installed (not on PATH nor in the ROCm bin folder)."""

    def __init__(self, tool: str, hint: str | None = None) -> None:
        self.hint = hint if hint is not None else INSTALL_HINTS.get(tool, "")
        message = f"{tool} not found on PATH"
        if self.hint:
            message += f" (get it from: {self.hint})"
        super().__init__(tool, message)


class ToolTimeout(ToolError):
    """The tool ran past its limit and was killed; what it had printed is kept."""

    def __init__(self, tool: str, timeout: float, stdout: str = "", stderr: str = "") -> None:
        super().__init__(tool, f"{tool} timed out after {timeout:g} s")
        self.timeout = timeout
        self.stdout = stdout
        self.stderr = stderr


@dataclass
class ToolRun:
    """How one call of a tool went."""

    returncode: int
    stdout: str
    stderr: str
    duration_s: float
    argv: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """Exit status 0."""
        return self.returncode == 0

    def first_line(self) -> str:
        """The first non-empty line of stderr, else of stdout: what to show as an error."""
        for text in (self.stderr, self.stdout):
            for line in text.splitlines():
                if line.strip():
                    return line.strip()[:500]
        return ""

    def transcript(self) -> str:
        """Command, exit status and both streams, as kept in a raw-output artifact."""
        return (
            f"$ {' '.join(self.argv)}\n"
            f"# exit status {self.returncode}, {self.duration_s:.3f} s\n"
            f"# --- stdout ---\n{self.stdout}"
            f"{'' if self.stdout.endswith(chr(10)) or not self.stdout else chr(10)}"
            f"# --- stderr ---\n{self.stderr}"
        )


def rocm_bin_dir() -> str:
    """ROCm's bin folder: $ROCM_PATH/bin, else /opt/rocm/bin (the images' layout)."""
    return os.path.join(os.environ.get("ROCM_PATH") or "/opt/rocm", "bin")


def which(name: str, extra_dirs: Iterable[str] | None = None) -> str | None:
    """Full path of an executable, searching PATH then extra_dirs.

    ``extra_dirs`` defaults to ROCm's bin folder because the ROCm images do
    not always put it on PATH. A name with a slash is checked as given.
    """
    if extra_dirs is None:
        extra_dirs = (rocm_bin_dir(),)
    if os.sep in name:
        return name if _is_executable(name) else None
    dirs = [d for d in os.environ.get("PATH", os.defpath).split(os.pathsep) if d]
    for directory in [*dirs, *extra_dirs]:
        candidate = os.path.join(directory, name)
        if _is_executable(candidate):
            return candidate
    return None


def _is_executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def make_die_with_parent() -> Callable[[], None] | None:
    """A function that asks Linux to SIGKILL the calling process when its parent dies.

    libc is loaded here, so the returned function only makes the system call:
    it is safe in a forked child before exec (a preexec_fn, a pool initializer).
    None where there is no prctl (not Linux). Note: the signal fires when the
    parent's forking *thread* ends, not the whole parent process.
    """
    import ctypes

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None

    def die_with_parent() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)

    return die_with_parent


def die_with_parent_preexec() -> Callable[[], None] | None:
    """A preexec_fn (or pool initializer) that asks Linux to SIGKILL the child when we die.

    The one way runners tie a tool's life to their own: run_tool uses it, and so
    does every library that starts a process itself (Popen, a process pool).

    There is a race (the runner dying between fork and prctl), closed by
    checking that the parent is still the one that forked. Run tools from a
    thread that outlives them (the main thread, normally): see
    make_die_with_parent.
    """
    die_with_parent = make_die_with_parent()
    if die_with_parent is None:
        return None
    parent = os.getpid()

    def preexec() -> None:
        die_with_parent()
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)

    return preexec


def run_tool(
    argv: Sequence[str],
    timeout: float,
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    extra_dirs: Iterable[str] | None = None,
) -> ToolRun:
    """Run a tool to completion and capture its output as text.

    Raises ToolMissing when argv[0] cannot be found and ToolTimeout when it
    runs past ``timeout`` seconds (the tool is killed; its partial output is
    on the exception). A non-zero exit is not an exception: many tools use it
    for "no device", which the caller reports rather than fails on.
    """
    tool = os.path.basename(argv[0])
    path = which(argv[0], extra_dirs)
    if path is None:
        raise ToolMissing(tool)
    import subprocess  # lazy: see the module's docstring

    preexec = die_with_parent_preexec() if os.name == "posix" else None
    started = time.monotonic()
    proc = subprocess.Popen(
        [path, *argv[1:]],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=None if env is None else dict(env),
        cwd=cwd,
        encoding="utf-8",
        errors="replace",
        preexec_fn=preexec,  # forces fork+exec, which PR_SET_PDEATHSIG needs anyway
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        try:
            # A grandchild may still hold the pipes open; do not wait for it long.
            stdout, stderr = proc.communicate(timeout=2)
        except subprocess.TimeoutExpired:
            stdout, stderr = "", ""
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
            proc.wait()
        raise ToolTimeout(tool, timeout, stdout or "", stderr or "") from None
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return ToolRun(
        returncode=proc.returncode,
        stdout=stdout or "",
        stderr=stderr or "",
        duration_s=time.monotonic() - started,
        argv=(path, *argv[1:]),
    )
