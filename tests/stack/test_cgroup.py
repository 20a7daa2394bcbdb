"""A local job's memory cgroup, made in the real cgroup file system of this host."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from stack import cgroup

MIB = 2**20


@pytest.fixture
def hierarchy() -> Iterator[cgroup.Hierarchy]:
    try:
        found = cgroup.find_hierarchy(f"test-cgroup-{os.getpid()}")
    except cgroup.CgroupError as exc:
        pytest.skip(f"no memory cgroup here: {exc}")
    yield found
    os.rmdir(found.root)  # empty again: every test removes the groups it made


def _dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    return int(done.stdout)


@pytest.mark.process
def test_a_group_holds_a_process_that_joins_it_and_goes_with_it(hierarchy):
    group = cgroup.make(hierarchy, f"job-1-1-w{os.getpid()}", 64 * MIB)
    sleeper = subprocess.Popen(["sleep", "60"], preexec_fn=lambda: cgroup.join(group.procs))
    try:
        assert group.pids() == [sleeper.pid]
        group.remove()
        assert sleeper.wait(10) == -9 and not os.path.exists(group.path)
    finally:
        sleeper.kill()


@pytest.mark.process
def test_a_process_over_its_groups_limit_is_killed_and_counted(hierarchy):
    group = cgroup.make(hierarchy, f"job-2-1-w{os.getpid()}", 64 * MIB)
    hog = subprocess.run(
        [sys.executable, "-c", "b = bytearray(256 * 2**20); b[::4096] = b'x' * (2**16)"],
        preexec_fn=lambda: cgroup.join(group.procs),
        check=False,
    )
    assert hog.returncode == -9 and group.oom_kills() == 1
    assert group.peak() is None or group.peak() <= 64 * MIB
    group.remove()


@pytest.mark.process
def test_the_groups_a_dead_worker_left_are_swept_and_a_live_ones_kept(hierarchy):
    dead = cgroup.make(hierarchy, f"job-3-1-w{_dead_pid()}", 64 * MIB)
    mine = cgroup.make(hierarchy, f"job-4-1-w{os.getpid()}", 64 * MIB)
    try:
        assert cgroup.sweep(hierarchy) == [dead.path]
        assert not os.path.exists(dead.path) and os.path.isdir(mine.path)
    finally:
        mine.remove()


def test_a_configured_folder_outside_any_cgroup_file_system_is_refused(tmp_path):
    with pytest.raises(cgroup.CgroupError, match="not in a cgroup file system"):
        cgroup.find_hierarchy("x", str(tmp_path))
