"""What a local job can reach: nothing of the host but its own inputs, out folder and tools.

A hostile runner is played by a small script run through the local executor's own
machinery (its sandbox, its limits, its way of starting and ending a runner): it tries
to read the server's secret-key file, /etc/shadow, the worker's environment and
another job's folder, to connect to a listener on 127.0.0.1, and leaves a child behind
with setsid. Each attempt must be refused and the child must be gone with the job.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path

import pytest
from django.conf import settings

from jobs import services
from jobs.choices import JobStatus
from jobs.executors import ExecutorError, local
from jobs.executors.base import JobSpec
from jobs.executors.local import LocalExecutor
from jobs.executors.sandbox import Mount, sandbox_problem
from teams.models import SourceSnapshot
from teams.sources import tree_of
from tests.factories import make_job, make_project
from tests.hooks import Recorder, alive

pytestmark = pytest.mark.skipif(
    sandbox_problem() is not None, reason=f"no sandbox here: {sandbox_problem()}"
)

SLEEP = f"300.{os.getpid()}{time.monotonic_ns() % 10**6:06d}"

HOSTILE = r"""
import json, os, socket, subprocess, sys, time
targets = json.loads(sys.argv[1])
seen = {}
for name, path in targets["read"].items():
    try:
        with open(path, "rb") as handle:
            seen[name] = handle.read(4096).decode("latin-1")
    except OSError as exc:
        seen[name] = f"refused: {exc.strerror}"
try:
    seen["listdir jobs"] = sorted(os.listdir(targets["jobs"]))
except OSError as exc:
    seen["listdir jobs"] = f"refused: {exc.strerror}"
sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
sock.settimeout(3)
try:
    sock.connect(("127.0.0.1", targets["port"]))
    sock.sendall(b"hello from the job")
    seen["connect"] = "connected"
except OSError as exc:
    seen["connect"] = f"refused: {exc.strerror}"
child = subprocess.Popen(
    ["sleep", targets["sleep"]], start_new_session=True,
    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
)
seen["child"] = child.pid
with open(os.path.join(targets["out"], "hostile.json"), "w") as handle:
    json.dump(seen, handle)
print("RESULT " + json.dumps(seen), flush=True)
"""


@pytest.fixture(params=["zygote", "bwrap"])
def sandbox_runner(request, settings) -> str:
    """Each isolation property is proven for both ways a sandboxed job starts: forked from
    the sandboxed zygote (which builds the sandbox itself) and a fresh interpreter in bwrap."""
    settings.ROCPATH_LOCAL_SANDBOX = "auto"
    settings.ROCPATH_LOCAL_SANDBOX_RUNNER = request.param
    return request.param


@pytest.fixture
def secret_key_file():
    """A secret-key file where the server keeps its own (var/), readable only by root."""
    path = Path(settings.VAR_DIR) / f"secret_key.test-{os.getpid()}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("the-server-secret-key-do-not-leak\n")
    path.chmod(0o600)
    yield path
    path.unlink(missing_ok=True)


def _run_hostile(tmp_path, monkeypatch, secret_key_file, listener) -> tuple[dict, Recorder, Path]:
    jobs = Path(settings.ARTIFACT_ROOT) / "jobs"
    other = jobs / "998" / "out"
    other.mkdir(parents=True)
    (other / "result.json").write_text('{"summary": "another team\'s result"}')
    private = tmp_path / "tree"
    private.mkdir()
    (private / "root-only.txt").write_text("only root may read this\n")
    (private / "root-only.txt").chmod(0o600)
    (private / "k.cu").write_text("// the team's own source\n")
    folder = jobs / "999"
    folder.mkdir(parents=True)
    spec = JobSpec(job_id=999, kind="noop", job_dir=folder, timeout_s=60, inputs={"src": private})
    spec.params_file.write_text("{}")
    targets = {
        "read": {
            "secret key": str(secret_key_file),
            "/etc/shadow": "/etc/shadow",
            "worker environ": f"/proc/{os.getpid()}/environ",
            "other job": str(other / "result.json"),
            "root-only input": str(spec.work_dir / "src" / "root-only.txt"),
            "own input": str(spec.work_dir / "src" / "k.cu"),
        },
        "jobs": str(jobs),
        "port": listener.getsockname()[1],
        "out": str(spec.out_dir),
        # A duration no other process on the machine sleeps for, so that the search for
        # survivors finds this job's child and not another suite's.
        "sleep": SLEEP,
    }
    python = settings.ROCPATH_STACK_PYTHON or sys.executable
    monkeypatch.setattr(
        LocalExecutor, "command", lambda self, spec: [python, "-c", HOSTILE, json.dumps(targets)]
    )
    recorder = Recorder()
    outcome = LocalExecutor().run(spec, recorder)
    assert outcome.exit_code == 0, outcome.stderr_tail
    started = recorder.events[0]["message"]
    forked = settings.ROCPATH_LOCAL_SANDBOX_RUNNER == "zygote"
    assert ("sandboxed, forked from the zygote" in started) is forked, started  # no fallback
    result = next(
        json.loads(line.removeprefix("RESULT "))
        for _, line in recorder.lines
        if line.startswith("RESULT")
    )
    return result, recorder, folder


@pytest.mark.process
def test_a_local_job_cannot_read_the_secret_key_shadow_the_workers_environment_or_other_jobs(
    tmp_path, monkeypatch, secret_key_file, listener, sandbox_runner
):
    seen, recorder, _ = _run_hostile(tmp_path, monkeypatch, secret_key_file, listener)
    for name in ("secret key", "/etc/shadow", "worker environ", "other job"):
        assert seen[name].startswith("refused"), f"{name}: {seen[name]!r}"
    assert "the-server-secret-key" not in json.dumps([recorder.lines, recorder.events])
    assert seen["listdir jobs"] == ["999"], "other jobs' folders are visible"
    assert seen["own input"] == "// the team's own source\n"  # what it is given, it reads


@pytest.mark.process
def test_a_local_jobs_uid_is_really_unprivileged(
    tmp_path, monkeypatch, secret_key_file, listener, sandbox_runner
):
    # A root-owned 0600 file among the job's own inputs: a uid that is root outside (a uid
    # mapped in a user namespace made by root) would read it; a real unprivileged uid cannot.
    seen, _, _ = _run_hostile(tmp_path, monkeypatch, secret_key_file, listener)
    assert seen["root-only input"] == "refused: Permission denied"


@pytest.mark.process
def test_a_local_job_cannot_open_a_network_connection(
    tmp_path, monkeypatch, secret_key_file, listener, sandbox_runner
):
    seen, _, _ = _run_hostile(tmp_path, monkeypatch, secret_key_file, listener)
    assert seen["connect"].startswith("refused")
    with pytest.raises(TimeoutError):
        listener.accept()  # the listener saw nothing


@pytest.mark.process
def test_a_child_that_calls_setsid_does_not_outlive_its_job(
    tmp_path, monkeypatch, secret_key_file, listener, sandbox_runner
):
    _run_hostile(tmp_path, monkeypatch, secret_key_file, listener)
    # The pid the child had inside is not its host pid: find it by what it runs, as the
    # job's uid or the worker's own.
    deadline = time.monotonic() + 5
    while (left := _sleepers()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not left, f"the job's setsid child survived: {left}"


def _sleepers() -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if cmdline[:2] == [b"sleep", SLEEP.encode()] and alive(int(entry.name)):
                found.append(int(entry.name))
    return found


def _queued_hipify_scan(team):
    """A queued hipify-scan (a kind that runs a team's code) over a one-file source."""
    project = make_project(team)
    snapshot = SourceSnapshot.objects.create(
        project=project, origin="upload", name="x.zip", status="ready"
    )
    tree_of(snapshot).mkdir(parents=True)
    (tree_of(snapshot) / "k.cu").write_text("__global__ void k() {}\n")
    job = make_job(team, kind="hipify-scan", params={}, project=project, source=snapshot)
    job.mark_queued("task-x")
    return job


@pytest.mark.django_db
def test_a_kind_that_runs_a_teams_code_refuses_to_run_without_a_sandbox(team, settings):
    settings.ROCPATH_LOCAL_SANDBOX = "off"  # as on a worker where bwrap cannot start
    job = _queued_hipify_scan(team)
    assert services.execute_job(job.pk, worker="w@h") == "errored"
    job.refresh_from_db()
    assert job.status == JobStatus.ERRORED
    assert "cannot sandbox them" in job.error and "ROCPATH_LOCAL_UNSANDBOXED=1" in job.error
    assert not (services.job_dir(job.pk) / "out" / "result.json").exists()


@pytest.mark.django_db
@pytest.mark.process
def test_an_operator_may_let_such_kinds_run_unsandboxed(team, settings):
    settings.ROCPATH_LOCAL_SANDBOX = "off"
    settings.ROCPATH_LOCAL_UNSANDBOXED = True
    job = _queued_hipify_scan(team)
    services.execute_job(job.pk, worker="w@h")
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.error


# The sandboxed zygote builds each sandbox itself: when a step does not take, the job must
# end errored saying which, and nothing of it may run (fail closed).

MARK_RAN = "import os, sys; open(os.path.join(sys.argv[1], 'ran'), 'w').write('ran')"


def _noop_spec(job_id: int, cache_dir: Path | None = None) -> JobSpec:
    folder = Path(settings.ARTIFACT_ROOT) / "jobs" / str(job_id)
    folder.mkdir(parents=True)
    spec = JobSpec(job_id=job_id, kind="noop", job_dir=folder, timeout_s=60, cache_dir=cache_dir)
    spec.params_file.write_text("{}")
    return spec


@pytest.mark.django_db
@pytest.mark.process
def test_a_job_whose_sandbox_cannot_be_built_errors_with_the_reason_and_runs_nothing(
    team, settings, monkeypatch
):
    settings.ROCPATH_LOCAL_SANDBOX_RUNNER = "zygote"
    real = local.sandbox_request

    def with_a_missing_source(layout, limits):
        box = real(layout, limits)
        box["plan"].append(
            asdict(Mount("bind", "/opt/rocpath-missing", "/opt/rocpath-missing-source"))
        )
        return box

    monkeypatch.setattr(local, "sandbox_request", with_a_missing_source)
    job = make_job(team, kind="noop", params={})
    job.mark_queued("task-x")
    assert services.execute_job(job.pk, worker="w@h") == "errored"
    job.refresh_from_db()
    assert job.status == JobStatus.ERRORED
    assert job.error == (
        "the job's sandbox could not be built: "
        "cannot bind /opt/rocpath-missing-source: it does not exist"
    )
    assert not (services.job_dir(job.pk) / "out" / "result.json").exists()


@pytest.mark.process
def test_a_job_that_would_keep_root_in_its_sandbox_is_refused_before_it_runs(settings, monkeypatch):
    settings.ROCPATH_LOCAL_SANDBOX_RUNNER = "zygote"
    real = local.sandbox_request
    monkeypatch.setattr(
        local, "sandbox_request", lambda layout, limits: {**real(layout, limits), "uid": 0}
    )
    spec = _noop_spec(990)
    python = settings.ROCPATH_STACK_PYTHON or sys.executable
    monkeypatch.setattr(
        LocalExecutor, "command", lambda self, spec: [python, "-c", MARK_RAN, str(spec.out_dir)]
    )
    with pytest.raises(ExecutorError) as refused:
        LocalExecutor().run(spec, Recorder())
    assert str(refused.value) == "the job's sandbox could not be built: the job would run as root"
    assert not (spec.out_dir / "ran").exists()


# A zygote serves the jobs of every team: what one job was given (its paths, its
# environment) must not be in the memory or the environment of the next.

SNOOP = r"""
import os, re, sys
half1, half2, out = sys.argv[1], sys.argv[2], sys.argv[3]
needle = re.compile(re.escape(half1.encode()) + b"(?:)" + re.escape(half2.encode()))
found = []
with open("/proc/self/environ", "rb") as handle:
    if needle.search(handle.read()):
        found.append("environ")
if any(needle.search(value.encode()) for value in os.environ.values()):
    found.append("os.environ")
with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
    for line in maps.read().splitlines():
        span, perms = line.split()[:2]
        start, end = (int(x, 16) for x in span.split("-"))
        if perms[0] != "r" or end - start > 1 << 28 or line.endswith("[vvar]"):
            continue
        try:
            mem.seek(start)
            if needle.search(mem.read(end - start)):
                found.append(line)
        except (OSError, OverflowError, ValueError):
            continue
open(os.path.join(out, "found"), "w").write(repr(found))
"""


@pytest.mark.process
def test_a_job_holds_nothing_of_the_job_before_it(settings, monkeypatch, sandbox_runner):
    marker = "previous-team-" + os.urandom(8).hex()
    cache = Path(settings.ARTIFACT_ROOT) / "cache" / marker  # in its env and mount plan
    cache.mkdir(parents=True)
    first = _noop_spec(991, cache_dir=cache)
    LocalExecutor().run(first, Recorder())
    assert (first.out_dir / "result.json").exists()

    second = _noop_spec(992)
    python = settings.ROCPATH_STACK_PYTHON or sys.executable
    half = len(marker) // 2
    monkeypatch.setattr(
        LocalExecutor,
        "command",
        lambda self, spec: [python, "-c", SNOOP, marker[:half], marker[half:], str(spec.out_dir)],
    )
    outcome = LocalExecutor().run(second, Recorder())
    assert outcome.exit_code == 0, outcome.stderr_tail
    assert (second.out_dir / "found").read_text() == "[]"


@pytest.mark.process
def test_a_job_without_gpus_sees_only_the_minimal_dev(settings, monkeypatch, sandbox_runner):
    spec = _noop_spec(993)
    python = settings.ROCPATH_STACK_PYTHON or sys.executable
    code = "import os, sys; print('DEV ' + ' '.join(sorted(os.listdir('/dev'))))"
    monkeypatch.setattr(LocalExecutor, "command", lambda self, spec: [python, "-c", code])
    recorder = Recorder()
    assert LocalExecutor().run(spec, recorder).exit_code == 0
    listed = next(line for _, line in recorder.lines if line.startswith("DEV "))
    minimal = "core fd full null ptmx pts random shm stderr stdin stdout tty urandom zero"
    assert listed.split()[1:] == minimal.split()


NESTED_USERNS = r"""
import subprocess
done = subprocess.run(["unshare", "-Ur", "id", "-u"], capture_output=True, text=True)
print(f"UNSHARE {done.returncode} {done.stdout.strip()!r} {done.stderr.strip()!r}", flush=True)
"""


@pytest.mark.process
def test_a_local_job_cannot_make_a_user_namespace_of_its_own(settings, monkeypatch, sandbox_runner):
    # Inside one it would be uid 0 with every capability over what it can mount.
    spec = _noop_spec(994)
    python = settings.ROCPATH_STACK_PYTHON or sys.executable
    monkeypatch.setattr(LocalExecutor, "command", lambda self, spec: [python, "-c", NESTED_USERNS])
    recorder = Recorder()
    outcome = LocalExecutor().run(spec, recorder)
    assert outcome.exit_code == 0, outcome.stderr_tail
    said = next(line for _, line in recorder.lines if line.startswith("UNSHARE "))
    code, uid = said.split()[1:3]
    assert code != "0" and uid == "''", said
    assert "Operation not permitted" in said, said
