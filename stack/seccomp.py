"""The seccomp filter every sandboxed local job runs under (issue 37, item 5).

The sandbox already takes every capability, the host's namespaces and root away; what a
job could still do is ask the kernel for more of it: make a user namespace of its own
(in it, uid 0 with capabilities over its own mounts: `unshare -Ur`), enter another
namespace, or reach the kernel's rarely needed and often attacked interfaces (keyrings,
BPF, userfaultfd, module and kexec loading, the mount API, file handles). The filter
answers those with EPERM and lets everything else through, as Docker's default profile
does for the same calls; clone3 answers ENOSYS, since its flags cannot be inspected,
and the C library then falls back to clone, whose flags are checked.

Built with libseccomp (Debian's libseccomp2, which systemd already needs) through
ctypes: the bwrap runner hands bwrap the compiled program (``--seccomp FD``, ``bpf()``),
the zygote's child loads it itself (``load()``) once it has dropped its privileges. A
host without libseccomp cannot build it and the job does not start (fail closed).

No Django here: stack/ runs inside sandboxes and containers that have none.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os

CLONE_NEWUSER = 0x10000000
# Refused outright (EPERM). Names libseccomp does not know on this architecture are
# skipped: they cannot be called there either.
DENIED = (
    "setns",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "userfaultfd",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "open_by_handle_at",
    "name_to_handle_at",
    "mount",
    "umount2",
    "pivot_root",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "move_mount",
    "open_tree",
    "mount_setattr",
    "swapon",
    "swapoff",
    "reboot",
    "acct",
)
# Refused when asked for a new user namespace: the flags are their first argument.
NO_NEW_USERNS = ("unshare", "clone")

_SCMP_ACT_ALLOW = 0x7FFF0000
_SCMP_CMP_MASKED_EQ = 7
_NR_SCMP_ERROR = -1


def _errno_action(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)


class _ArgCmp(ctypes.Structure):
    _fields_ = [
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    ]


class SeccompError(RuntimeError):
    """The filter could not be built or loaded: the job must not start."""


def _library() -> ctypes.CDLL:
    name = "libseccomp.so.2"  # the soname: find_library would start ldconfig in the sandbox
    try:
        lib = ctypes.CDLL(name, use_errno=True)
    except OSError as exc:
        raise SeccompError(f"libseccomp is missing ({exc}): apt-get install libseccomp2") from exc
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.POINTER(_ArgCmp),
    ]
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    return lib


def _check(code: int, what: str) -> None:
    if code < 0:
        raise SeccompError(f"libseccomp: {what}: {os.strerror(-code)}")


def _filter(lib: ctypes.CDLL) -> int:
    ctx = lib.seccomp_init(_SCMP_ACT_ALLOW)
    if not ctx:
        raise SeccompError("libseccomp: seccomp_init failed")
    try:
        for name in DENIED:
            nr = lib.seccomp_syscall_resolve_name(name.encode())
            if nr != _NR_SCMP_ERROR:
                _check(
                    lib.seccomp_rule_add_array(ctx, _errno_action(errno.EPERM), nr, 0, None), name
                )
        flags = (_ArgCmp * 1)(_ArgCmp(0, _SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER))
        for name in NO_NEW_USERNS:
            nr = lib.seccomp_syscall_resolve_name(name.encode())
            _check(lib.seccomp_rule_add_array(ctx, _errno_action(errno.EPERM), nr, 1, flags), name)
        nr = lib.seccomp_syscall_resolve_name(b"clone3")
        if nr != _NR_SCMP_ERROR:
            _check(
                lib.seccomp_rule_add_array(ctx, _errno_action(errno.ENOSYS), nr, 0, None), "clone3"
            )
    except BaseException:
        lib.seccomp_release(ctx)
        raise
    return ctx


@functools.cache
def bpf() -> bytes:
    """The compiled filter, as bwrap's ``--seccomp FD`` reads it; built once per process
    (it is the same for every job, and each job start asked libseccomp again)."""
    lib = _library()
    ctx = _filter(lib)
    fd = os.memfd_create("rocpath-seccomp")
    try:
        _check(lib.seccomp_export_bpf(ctx, fd), "export")
        os.lseek(fd, 0, os.SEEK_SET)
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
        lib.seccomp_release(ctx)


def load() -> None:
    """Put this process (and all it starts) under the filter; needs no_new_privs or root."""
    lib = _library()
    ctx = _filter(lib)
    try:
        _check(lib.seccomp_load(ctx), "load")
    finally:
        lib.seccomp_release(ctx)
