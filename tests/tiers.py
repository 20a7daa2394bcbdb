"""The test tiers, enforced: a test that starts a process or a server says so by a marker.

``make test-fast`` runs the tests with none of TIER_MARKERS: in-process code on the
database, no subprocess, no listening socket, no fork. It is the tier a developer runs
between edits, so it must stay fast, and it stays fast only if a new heavy test cannot
slip into it unmarked. Two checks keep it so:

- at collection, a test that asks for a fixture which starts something (a worker, a
  live server, Chromium, a Slurm cluster, a private Redis) must carry that fixture's
  marker (FIXTURE_MARKERS);
- at run time, a test with no process-starting marker fails the moment it starts a
  subprocess, forks, or listens on a socket, naming the marker to add.

Marked tests run in ``make test`` (everything). docs/development.md lists the tiers.
"""

from __future__ import annotations

import _posixsubprocess
import contextlib
import os
import socket
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

# One meaning each. All but ``slow`` start something outside the test's own thread.
PROCESS_MARKERS = ("integration", "browser", "containers", "faults", "process")
TIER_MARKERS = (*PROCESS_MARKERS, "slow")
FAST_EXPRESSION = "not (" + " or ".join(TIER_MARKERS) + ")"

# A fixture that starts something → the marker its tests must carry.
FIXTURE_MARKERS = {
    "worker": "integration",
    "docker_worker": "containers",
    "job_image": "containers",
    "slurm_cluster": "integration",
    "slurm_worker": "integration",
    "live_server": "integration",
    "chromium": "browser",
    "page": "browser",
    "redis_server": "faults",
    "private_broker": "faults",
    "fault_worker": "faults",
}


def pytest_configure(config: pytest.Config) -> None:
    for line in (
        "integration: starts rocpath's own processes (workers, beat, web, make run) on real "
        "services",
        "browser: drives a real headless Chromium",
        "containers: runs job containers on a real Docker engine",
        "faults: stops, kills or starves a service or process it started itself",
        "process: starts a subprocess, forks or listens on a socket (a real tool such as "
        "hipify-perl, git or bwrap; a fresh interpreter; a server thread)",
        "slow: in-process only, but takes more than about two seconds",
    ):
        config.addinivalue_line("markers", line)


def xdist_group(item: pytest.Item, have: set[str]) -> str | None:
    """Which tests ``make test`` (pytest-xdist, --dist loadgroup) keeps on one worker.

    One Slurm cluster and one job-image build per run, not one per xdist worker; and a
    module that starts processes keeps its module-scoped set-up (Chromium, a live server)
    and its own timing on one worker. In-process tests go wherever a worker is free.
    """
    fixtures = set(getattr(item, "fixturenames", ()))
    if fixtures & {"slurm_cluster", "slurm_worker"}:
        return "slurm"
    if "containers" in have:
        return "docker"
    if have & set(PROCESS_MARKERS) - {"process"}:
        return item.nodeid.split("::")[0]
    return None


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    errors = []
    for item in items:
        have = {mark.name for mark in item.iter_markers()}
        if group := xdist_group(item, have):
            item.add_marker(pytest.mark.xdist_group(group))
        for fixture in getattr(item, "fixturenames", ()):
            wanted = FIXTURE_MARKERS.get(fixture)
            if wanted and wanted not in have:
                errors.append(
                    f"{item.nodeid}: uses the fixture {fixture!r}, which starts a process: "
                    f"mark it @pytest.mark.{wanted} (tests/tiers.py)"
                )
    if errors:
        raise pytest.UsageError("tests in the wrong tier:\n" + "\n".join(errors))


def _refuse(what: str) -> Any:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        # pytest.fail raises a BaseException: code under test that catches OSError or
        # Exception (a tool runner reporting "tool missing") cannot swallow it.
        pytest.fail(
            f"this test {what} but carries none of the markers {', '.join(PROCESS_MARKERS)}: "
            "mark it (tests/tiers.py; `process` for a tool, a fresh interpreter or a server), "
            "so that `make test-fast` stays in-process",
            pytrace=False,
        )

    return refuse


@contextlib.contextmanager
def _in_process_only(item: pytest.Item) -> Iterator[None]:
    if any(item.get_closest_marker(name) for name in PROCESS_MARKERS):
        yield
        return
    with pytest.MonkeyPatch.context() as patch:
        # subprocess (its own alias) and multiprocessing's spawn and forkserver all start
        # through _posixsubprocess.fork_exec
        patch.setattr(subprocess, "_fork_exec", _refuse("starts a subprocess"))
        patch.setattr(_posixsubprocess, "fork_exec", _refuse("starts a subprocess"))
        patch.setattr(os, "fork", _refuse("forks"))
        patch.setattr(os, "forkpty", _refuse("forks"))
        patch.setattr(os, "posix_spawn", _refuse("spawns a process"))
        patch.setattr(os, "posix_spawnp", _refuse("spawns a process"))
        patch.setattr(os, "system", _refuse("runs a shell command"))
        patch.setattr(socket.socket, "listen", _refuse("listens on a socket (a server)"))
        yield


# Set-up, call and tear-down alike: a module- or session-scoped fixture that starts a
# process is set up within the first test that needs it, and is caught there.
@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    with _in_process_only(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    with _in_process_only(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    # Where the next test is in another module (or there is none), module- and
    # session-scoped fixtures end here too; one that started a process was set up by a
    # marked test (set-up is guarded), so its end is not this test's doing.
    if nextitem is None or nextitem.path != item.path:
        return (yield)
    with _in_process_only(item):
        return (yield)
