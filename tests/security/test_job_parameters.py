"""No job parameter names a host path, and none asks a worker for more than it gives one job."""

from __future__ import annotations

import os

import pytest

from jobs import services
from jobs.choices import JobStatus
from jobs.models import Job
from teams.models import SourceSnapshot
from teams.sources import tree_of
from tests.factories import make_job, make_project, make_team

URL = "/api/v1/jobs/"
pytestmark = pytest.mark.django_db


def _source(project, files: dict[str, str]) -> SourceSnapshot:
    snapshot = SourceSnapshot.objects.create(
        project=project, origin="upload", name="x.zip", status="ready"
    )
    tree = tree_of(snapshot)
    tree.mkdir(parents=True)
    for name, text in files.items():
        (tree / name).write_text(text)
    return snapshot


def _refused(api, body: dict) -> str:
    response = api.post(URL, body, format="json")
    assert response.status_code == 400, response.content
    assert Job.objects.count() == 0
    return " ".join(response.json()["params"])


def test_a_scan_cannot_name_another_projects_cache(api, team, no_enqueue):
    project = make_project(team)
    _source(project, {"k.cu": "int x;\n"})
    other = make_project(make_team("Beta"))
    theirs = services.cache_dir_for(Job(kind="hipify-scan", project=other, team=other.team))
    messages = _refused(
        api,
        {"kind": "hipify-scan", "project": project.pk, "params": {"cache_dir": str(theirs)}},
    )
    assert "cache_dir: unknown field" in messages


def test_sandbox_check_may_not_ask_for_a_tebibyte_of_memory(api, team, settings):
    messages = _refused(
        api, {"kind": "sandbox-check", "params": {"action": "allocate-memory", "megabytes": 2**20}}
    )
    assert f"megabytes: at most {settings.ROCPATH_JOB_MAX_MEMORY_MB}" in messages
    assert "ROCPATH_JOB_MAX_MEMORY_MB" in messages


def test_sandbox_check_may_not_ask_for_a_hundred_thousand_processes(api, team, settings):
    messages = _refused(
        api, {"kind": "sandbox-check", "params": {"action": "fork-bomb", "max_processes": 100_000}}
    )
    assert f"max_processes: at most {settings.ROCPATH_JOB_MAX_PROCESSES}" in messages


def test_noop_may_not_write_four_gibibytes(api, team, settings):
    messages = _refused(api, {"kind": "noop", "params": {"write_bytes": 4 * 1024**3}})
    assert f"write_bytes: at most {settings.ROCPATH_JOB_MAX_FILE_MB * 1024**2}" in messages


def test_noop_may_not_sleep_for_a_day(api, team, settings):
    messages = _refused(api, {"kind": "noop", "params": {"seconds": 86400}})
    assert f"seconds: at most {settings.ROCPATH_JOB_TIMEOUT_MAX_S}" in messages


def test_a_scan_may_not_ask_for_more_worker_processes_than_the_host_has(api, team, settings):
    project = make_project(team)
    _source(project, {"k.cu": "int x;\n"})
    messages = _refused(
        api,
        {"kind": "hipify-scan", "project": project.pk, "params": {"jobs": settings.HOST_CPUS + 1}},
    )
    assert f"jobs: at most {settings.HOST_CPUS}" in messages


def test_a_timeout_above_the_servers_cap_is_refused(api, team, settings):
    response = api.post(
        URL,
        {"kind": "noop", "timeout_s": settings.ROCPATH_JOB_TIMEOUT_MAX_S + 1},
        format="json",
    )
    assert response.status_code == 400
    assert str(settings.ROCPATH_JOB_TIMEOUT_MAX_S) in response.json()["timeout_s"][0]


def test_values_within_the_caps_are_accepted(api, team, no_enqueue):
    response = api.post(
        URL, {"kind": "noop", "params": {"seconds": 1, "write_bytes": 1024}}, format="json"
    )
    assert response.status_code == 201, response.content


CUDA = "#include <cuda_runtime.h>\nint main() { void *p; cudaMalloc(&p, 16); }\n"


def _run_job(team, kind: str, params: dict, files: dict[str, str]) -> Job:
    project = make_project(team)
    job = make_job(team, kind=kind, params=params, project=project, source=_source(project, files))
    job.mark_queued("task-x")
    services.execute_job(job.pk, worker="w@h")
    job.refresh_from_db()
    return job


@pytest.mark.parametrize("engine", ["hipify-perl", "fast"])
@pytest.mark.process
def test_a_source_named_like_an_option_is_scanned_as_a_file(team, engine):
    from stack.tools import which

    if which("hipify-perl") is None:
        pytest.skip("hipify-perl is not installed")
    job = _run_job(team, "hipify-scan", {"engine": engine}, {"-o=x.cu": CUDA, "a.cu": CUDA})
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert job.summary["totals"]["files"] == 2
    assert job.summary["totals"]["cuda_refs"] == 4  # two references in each of the two files
    tree = tree_of(job.source)
    assert sorted(os.listdir(tree)) == ["-o=x.cu", "a.cu"]  # no x.cu written anywhere


@pytest.mark.process
def test_a_source_named_like_an_option_is_converted_as_a_file(team):
    from stack.tools import which

    if which("hipify-perl") is None:
        pytest.skip("hipify-perl is not installed")
    job = _run_job(team, "hipify-convert", {}, {"-o=x.cu": CUDA})
    assert job.status == JobStatus.SUCCEEDED, job.error
    diff = (services.artifact_dir(job.pk) / "hipify.diff").read_text()
    assert "+++ b/-o=x.cu" in diff and "hipMalloc" in diff
    assert sorted(os.listdir(tree_of(job.source))) == ["-o=x.cu"]


@pytest.mark.parametrize(
    "image",
    [
        "rocpath/debian:latest\n--privileged",
        "rocpath/debian:$(touch /tmp/owned)",
        "rocpath/debian:latest; id",
        "rocpath/debian latest",
        "rocpath/../../debian",
    ],
)
def test_an_image_that_is_not_an_image_reference_is_refused_at_submission(
    api, team, no_enqueue, image
):
    response = api.post(URL, {"kind": "noop", "team": team.slug, "image": image}, format="json")
    assert response.status_code == 400, response.content
    assert "not an image reference" in " ".join(response.json()["image"])
    assert Job.objects.count() == 0


def test_an_allowed_image_reference_with_a_tag_and_digest_is_accepted(api, team, no_enqueue):
    image = "rocpath/debian:trixie-2026.12@sha256:" + "ab" * 32
    response = api.post(URL, {"kind": "noop", "team": team.slug, "image": image}, format="json")
    assert response.status_code == 201, response.content
