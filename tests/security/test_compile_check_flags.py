"""compile-check: hipcc flags come from an allowlist, and a source cannot include host files."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest
from django.conf import settings

from jobs import services
from jobs.choices import JobStatus
from jobs.executors.sandbox import sandbox_problem
from jobs.models import Job
from stack.events import Emitter
from stack.kinds.compile_check import run
from stack.runtime import RunContext
from stack.tools import which
from teams.models import SourceSnapshot
from teams.sources import tree_of
from tests.factories import make_job, make_project

URL = "/api/v1/jobs/"
pytestmark = pytest.mark.django_db

SECRET = "the-server-secret-key-do-not-leak"


@pytest.fixture
def secret_key_file():
    path = Path(settings.VAR_DIR) / f"secret_key.test-{os.getpid()}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(SECRET + "\n")
    path.chmod(0o600)
    yield path
    path.unlink(missing_ok=True)


def _source(project, files: dict[str, str | bytes]) -> SourceSnapshot:
    snapshot = SourceSnapshot.objects.create(
        project=project, origin="upload", name="x.zip", status="ready"
    )
    tree = tree_of(snapshot)
    tree.mkdir(parents=True)
    for name, data in files.items():
        (tree / name).write_bytes(data if isinstance(data, bytes) else data.encode())
    return snapshot


@pytest.mark.parametrize(
    "flags",
    [
        ["-include/etc/passwd"],
        ["-include", "/etc/passwd"],
        ["-include{secret}"],
        ["-MD", "-MF/tmp/x"],
        ["-MF", "/tmp/x"],
        ["-fplugin=./evil.so"],
        ["-Xclang", "-load", "-Xclang", "./evil.so"],
        ["-B/tmp/evil"],
        ["-Wp,-MD,/tmp/x"],
        ["-I/etc"],
        ["-I../../.."],
        ["--offload-arch=gfx1100"],
        ["-o", "/tmp/x"],
        ["-Wx--rocm-path=fake"],  # hipcc reads its own option inside any argument
        ["-DX=1--genco"],
    ],
)
def test_a_flag_outside_the_allowlist_is_refused_at_submit(api, team, flags, secret_key_file):
    project = make_project(team)
    _source(project, {"k.hip": "int x;\n"})
    flags = [f.replace("{secret}", str(secret_key_file)) for f in flags]
    response = api.post(
        URL,
        {"kind": "compile-check", "project": project.pk, "params": {"extra_flags": flags}},
        format="json",
    )
    assert response.status_code == 400, response.content
    assert "extra_flags." in " ".join(response.json()["params"])
    assert Job.objects.count() == 0


def test_the_allowed_flags_are_accepted(api, team, no_enqueue):
    project = make_project(team)
    _source(project, {"k.hip": "int x;\n"})
    flags = ["-O2", "-DN=4", "-UNDEBUG", "-std=c++17", "-Wall", "-Wno-unused", "-g", "-Iinclude"]
    response = api.post(
        URL,
        {"kind": "compile-check", "project": project.pk, "params": {"extra_flags": flags}},
        format="json",
    )
    assert response.status_code == 201, response.content


def test_the_runner_refuses_such_flags_too(tmp_path):
    (tmp_path / "work" / "src").mkdir(parents=True)
    (tmp_path / "out").mkdir()
    ctx = RunContext(out=tmp_path / "out", emit=Emitter(io.StringIO()), work=tmp_path / "work")
    if which("hipcc") is None:
        pytest.skip("hipcc is not installed")
    result = run({"extra_flags": ["-fplugin=./evil.so"], "hipify": False}, ctx)
    assert result.status == "errored"
    assert result.error == "extra_flags: not allowed: -fplugin=./evil.so"


@pytest.mark.skipif(which("hipcc") is None, reason="hipcc is not installed")
@pytest.mark.skipif(sandbox_problem() is not None, reason="no sandbox here")
@pytest.mark.process
def test_a_source_that_includes_host_files_reads_nothing_of_them(team, secret_key_file):
    project = make_project(team)
    files = {
        "passwd.hip": '#include "/etc/passwd"\n',
        "key.hip": f'#include "{secret_key_file}"\n',
    }
    job = make_job(
        team,
        kind="compile-check",
        params={"targets": ["gfx90a"], "hipify": False},
        project=project,
        source=_source(project, files),
    )
    job.mark_queued("task-x")
    services.execute_job(job.pk, worker="w@h")
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED, job.error  # both fail to compile: not found
    out = services.job_dir(job.pk) / "out"
    seen = json.dumps(job.summary) + json.dumps(list(job.events.values_list("data", flat=True)))
    seen += "".join(p.read_text(errors="replace") for p in out.rglob("*") if p.is_file())
    assert "file not found" in seen, seen[:3000]
    for line in Path("/etc/passwd").read_text().splitlines()[:3]:
        assert line not in seen
    assert SECRET not in seen
