"""Which git URLs a team may have a worker clone, and how git is run for it.

A git URL makes the worker open a connection (or read a folder) of the team's choosing,
so the policy is an allowlist, checked when the source is added (a 400) and again on
the worker just before the clone (DNS may have changed in between):

- ``https://`` always; ``http://`` only when ``ROCPATH_GIT_ALLOW_HTTP`` is on;
- ``ssh://`` and ``user@host:path`` only for a team an operator gave a key
  (``ROCPATH_GIT_SSH_KEYS``) and with the operator's ``ROCPATH_GIT_SSH_KNOWN_HOSTS``;
- the host is resolved and every address must be global (not loopback, private,
  link-local, multicast, reserved, unspecified, shared) unless an operator allows the
  host (``ROCPATH_GIT_HOST_ALLOW``, names or networks); the address checked is the
  one git connects to (``http.curloptResolve`` / ssh ``HostName``), so a second DNS
  answer cannot move the clone elsewhere;
- ``file://`` and local paths only inside the team's own folders
  (``ROCPATH_GIT_LOCAL_ALLOW``), compared on the percent-decoded, resolved path, and
  handed to git as that resolved path; the repository there may not point git
  elsewhere (a ``.git`` file, ``commondir``, alternates, a link leaving the folder).

git itself runs with only the permitted protocol, no system or user configuration, an
empty HOME, no prompts or credential helpers, no hooks, no submodules, symlinks checked
out as plain files, and size and time limits enforced while it runs.
"""

from __future__ import annotations

import ipaddress
import os
import re
import shlex
import signal
import socket
import subprocess
import time
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

from django.conf import settings

from teams.archives import Limits, SourceError

_HOST = re.compile(r"^(?!-)[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})$")
_SCP = re.compile(r"^(?:(?P<user>[A-Za-z0-9._-]+)@)?(?P<host>[A-Za-z0-9.-]+):(?P<path>.+)$")
_REF = re.compile(r"^(?![-/.])[A-Za-z0-9._/+-]{1,200}$")
POLL_S = 0.05
HTTPS_ONLY = "use an https:// URL (ssh:// and git@ need a key an operator set up for your team)"


@dataclass(frozen=True)
class GitSource:
    """A URL the policy accepted: what git is given, and what it may connect to."""

    url: str
    scheme: str  # "https", "http", "ssh" or "file"
    host: str = ""
    port: int = 0
    address: str = ""  # the checked address the clone is pinned to
    ssh_key: str = ""
    config: list[str] = field(default_factory=list)


def check_ref(ref: str) -> None:
    if ref and (not _REF.fullmatch(ref) or ".." in ref or ref.endswith((".lock", "/"))):
        raise SourceError(f"{ref!r}: not a branch or tag name")


def check_url(url: str, team_slug: str) -> GitSource:
    """The URL as git will be given it, or SourceError saying why it may not be cloned."""
    if not url or url != url.strip() or any(ch.isspace() or ord(ch) < 32 for ch in url):
        raise SourceError(f"{url!r}: spaces or control characters in the URL")
    if url.startswith("-"):
        raise SourceError(f"{url!r}: {HTTPS_ONLY}")
    if match := re.match(r"^([A-Za-z][A-Za-z0-9+.-]*)://", url):
        scheme = match.group(1).lower()
        if scheme in ("https", "http"):
            return _web(url, scheme)
        if scheme == "ssh":
            parts = urlsplit(url)
            return _ssh(url, parts.hostname or "", _port(url, parts, 22), team_slug)
        if scheme == "file":
            parts = urlsplit(url)
            if parts.netloc:
                raise SourceError(f"{url!r}: file:// URLs name no host (file:///path)")
            return _local(url, unquote(parts.path), team_slug)
        raise SourceError(f"{url!r}: {HTTPS_ONLY}")
    if url.startswith("/"):
        return _local(url, url, team_slug)
    if (scp := _SCP.fullmatch(url)) and "/" not in url.split(":", 1)[0]:
        return _ssh(url, scp.group("host"), 22, team_slug)
    raise SourceError(f"{url!r}: {HTTPS_ONLY}")


def _port(url: str, parts: object, default: int) -> int:
    try:
        return parts.port or default  # type: ignore[attr-defined]
    except ValueError:
        raise SourceError(f"{url!r}: not a valid port") from None


def _web(url: str, scheme: str) -> GitSource:
    if scheme == "http" and not settings.ROCPATH_GIT_ALLOW_HTTP:
        raise SourceError(f"{url!r}: http:// is not allowed (use https://)")
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = _port(url, parts, 443 if scheme == "https" else 80)
    address = resolve(url, host, port)
    shown = f"[{address}]" if ":" in address else address
    return GitSource(
        url=url,
        scheme=scheme,
        host=host,
        port=port,
        address=address,
        config=[f"http.curloptResolve={host}:{port}:{shown}", "http.followRedirects=false"],
    )


def _ssh(url: str, host: str, port: int, team_slug: str) -> GitSource:
    key = settings.ROCPATH_GIT_SSH_KEYS.get(team_slug)
    if not key:
        raise SourceError(
            f"{url!r}: ssh needs a key an operator set up for team {team_slug} "
            "(ROCPATH_GIT_SSH_KEYS); use https://"
        )
    if not settings.ROCPATH_GIT_SSH_KNOWN_HOSTS:
        raise SourceError(f"{url!r}: ssh needs the operator's ROCPATH_GIT_SSH_KNOWN_HOSTS")
    address = resolve(url, host, port)
    return GitSource(url=url, scheme="ssh", host=host, port=port, address=address, ssh_key=key)


def _local(url: str, path: str, team_slug: str) -> GitSource:
    allowed = settings.ROCPATH_GIT_LOCAL_ALLOW.get(team_slug, [])
    refusal = (
        f"{url!r}: local paths and file:// URLs are only allowed inside your team's folders "
        "of ROCPATH_GIT_LOCAL_ALLOW"
    )
    if "\x00" in path or ".." in path.split("/"):
        raise SourceError(refusal)
    resolved = os.path.realpath(path)
    for prefix in allowed:
        root = os.path.realpath(prefix)
        if _within(resolved, root):
            _own_repository(url, resolved, root)
            return GitSource(url="file://" + quote(resolved), scheme="file")
    raise SourceError(refusal)


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


# What git follows out of a repository's folder: a `.git` file names the repository to
# read, `commondir` a worktree's shared one, the alternates files folders to borrow
# objects from. Any of them could name another team's repository (issue 37, item 2).
_POINTERS = ("commondir", "objects/info/alternates", "objects/info/http-alternates")


def _own_repository(url: str, folder: str, root: str) -> None:
    """Refuse a local repository that points git outside the team's allowed folder.

    Checked on the files, not by asking git: git run in a team's repository reads that
    repository's configuration. The folder must itself be a repository (a `.git`
    directory in it, or a bare one), since git would otherwise try `folder.git`, a
    sibling, and no file or folder of its git directory may be a link leaving ``root``.
    """
    refusal = f"{url!r}: this repository points git outside your team's allowed folder"
    dot_git = os.path.join(folder, ".git")
    if os.path.islink(dot_git) or os.path.isfile(dot_git):
        raise SourceError(f"{refusal} (a .git file or link)")
    git_dir = dot_git if os.path.isdir(dot_git) else folder
    if not all(os.path.exists(os.path.join(git_dir, part)) for part in ("HEAD", "objects")):
        raise SourceError(f"{url!r}: not a git repository")
    for pointer in _POINTERS:
        if os.path.lexists(os.path.join(git_dir, pointer)):
            raise SourceError(f"{refusal} ({pointer})")
    for parent, dirs, files in os.walk(git_dir):
        for name in dirs + files:
            entry = os.path.join(parent, name)
            if os.path.islink(entry) and not _within(os.path.realpath(entry), root):
                raise SourceError(f"{refusal} (a link at {os.path.relpath(entry, folder)})")


def resolve(url: str, host: str, port: int) -> str:
    """The address to connect to: every answer checked, the first one used."""
    if not _HOST.fullmatch(host) and not _is_ip(host):
        raise SourceError(f"{url!r}: not a valid host name")
    try:
        answers = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise SourceError(f"{url!r}: the host {host} cannot be resolved") from None
    addresses = list(dict.fromkeys(str(info[4][0]) for info in answers))
    for address in addresses:
        if reason := internal(host, address):
            raise SourceError(
                f"{url!r}: {host} is {reason}; an operator can allow it (ROCPATH_GIT_HOST_ALLOW)"
            )
    if not addresses:
        raise SourceError(f"{url!r}: the host {host} cannot be resolved")
    return addresses[0]


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def internal(host: str, address: str, allow: list[str] | None = None) -> str | None:
    """Why an address is not one to connect to (None when it is global or allowed).

    ``allow``: the operator's host names and networks that may be internal, by default
    ROCPATH_GIT_HOST_ALLOW (results.webhooks passes ROCPATH_WEBHOOK_HOST_ALLOW).
    """
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if getattr(ip, "ipv4_mapped", None):
        ip = ip.ipv4_mapped
    for entry in settings.ROCPATH_GIT_HOST_ALLOW if allow is None else allow:
        if entry.lower() == host.lower():
            return None
        try:
            if ip in ipaddress.ip_network(entry, strict=False):
                return None
        except ValueError:
            continue
    for attribute, words in (
        ("is_loopback", "a loopback address"),
        ("is_unspecified", "an unspecified address"),
        ("is_link_local", "a link-local address"),
        ("is_multicast", "a multicast address"),
        ("is_private", "a private address"),
        ("is_reserved", "a reserved address"),
    ):
        if getattr(ip, attribute):
            return words
    if not ip.is_global:
        return "not a global address"
    return None


# --- running git ------------------------------------------------------------------
def git_env(source: GitSource, home: Path) -> dict[str, str]:
    """Nothing of the worker's own: no config, no ~/.ssh, no agent, no prompts."""
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "LC_ALL": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "/bin/false",
        "SSH_ASKPASS": "/bin/false",
        "GIT_ALLOW_PROTOCOL": source.scheme,
    }
    if source.scheme == "ssh":
        env["GIT_SSH_VARIANT"] = "ssh"
        env["GIT_SSH_COMMAND"] = ssh_command(source)
    return env


def ssh_command(source: GitSource) -> str:
    options = [
        "IdentitiesOnly=yes",
        "IdentityAgent=none",
        "BatchMode=yes",
        "StrictHostKeyChecking=yes",
        f"UserKnownHostsFile={settings.ROCPATH_GIT_SSH_KNOWN_HOSTS}",
        "GlobalKnownHostsFile=/dev/null",
        "UpdateHostKeys=no",
        f"HostKeyAlias={source.host}",
        f"HostName={source.address}",
        "ProxyCommand=none",
        "ProxyJump=none",
        "ControlMaster=no",
        "ControlPath=none",
        "ForwardAgent=no",
        "ClearAllForwardings=yes",
        "PermitLocalCommand=no",
        "ConnectTimeout=30",
    ]
    argv = ["ssh", "-F", "/dev/null", "-i", source.ssh_key]
    for option in options:
        argv += ["-o", option]
    return shlex.join(argv)


def clone_argv(source: GitSource, ref: str, staging: Path) -> list[str]:
    config = [
        "protocol.allow=never",
        f"protocol.{source.scheme}.allow=always",
        "core.hooksPath=/dev/null",
        "core.symlinks=false",  # a link in the repository is checked out as a text file
        "core.fsmonitor=false",
        "credential.helper=",
        "submodule.recurse=false",
        "init.templateDir=",
        *source.config,
    ]
    argv = ["git"]
    for item in config:
        argv += ["-c", item]
    argv += ["clone", "--quiet", "--no-tags", "--depth", "1", "--single-branch", "--template="]
    if ref:
        argv += ["--branch", ref]
    return [*argv, "--", source.url, str(staging)]


def run_clone(source: GitSource, ref: str, staging: Path, home: Path, limits: Limits) -> None:
    """Clone into ``staging``; killed as soon as it outgrows the limits or the time.

    The clone (history pack and checkout together) may take twice the source's byte
    limit and its file limit plus a margin for ``.git`` while it runs; the checked-out
    tree alone is held to the limits afterwards.
    """
    max_bytes, max_entries = 2 * limits.max_bytes, limits.max_files + 10_000
    timeout = settings.ROCPATH_GIT_TIMEOUT_S
    stderr_path = home / "stderr"
    with stderr_path.open("wb") as stderr:
        proc = subprocess.Popen(
            clone_argv(source, ref, staging),
            env=git_env(source, home),
            cwd=home,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        try:
            while True:
                try:
                    code = proc.wait(timeout=POLL_S)
                    break
                except subprocess.TimeoutExpired:
                    pass
                size, entries = folder_usage(staging)
                if size > max_bytes or entries > max_entries:
                    raise SourceError(
                        f"the repository is over the limits ({limits.max_bytes} bytes, "
                        f"{limits.max_files} files): the clone was stopped"
                    )
                if time.monotonic() > deadline:
                    raise SourceError(f"git clone timed out after {timeout} s")
        finally:
            if proc.poll() is None:
                _kill(proc)
    if code != 0:
        text = stderr_path.read_text(errors="replace").strip()
        raise SourceError(f"git clone failed: {text[-2000:]}")


def _kill(proc: subprocess.Popen) -> None:
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def folder_usage(root: Path) -> tuple[int, int]:
    """Bytes and entries under ``root``, links not followed, vanishing files ignored."""
    size = entries = 0
    for folder, dirs, files in os.walk(root):
        entries += len(dirs) + len(files)
        for name in files:
            try:
                size += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                continue
    return size, entries
