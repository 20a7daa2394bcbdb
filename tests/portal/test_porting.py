"""The porting report, from a real hipify-scan of an uploaded tree (real hipify-perl)."""

from __future__ import annotations

import io
import zipfile

import pytest
from django.test import Client

from jobs import services
from jobs.choices import JobStatus
from stack.tools import which
from teams.sources import add_upload, extract_upload
from tests.factories import make_project

# Only on the tests that scan: the rest (steps, targets, the viewer) need no hipify-perl.
needs_hipify = pytest.mark.skipif(
    which("hipify-perl") is None,
    reason="hipify-perl is not installed (scripts/install-rocm-tools.sh)",
)

CUDA = """#include <cuda_runtime.h>
// texture references are gone in CUDA 12
texture<float, 1> tex;
__global__ void scale(float* x) { x[threadIdx.x] *= 2.0f; }
int main() {
  float* d; cudaMalloc(&d, 1024);
  cudaGraphExecNodeSetParams(0, 0, 0);
  cudaFree(d);
}
"""


def _scan(user, project, source=None) -> int:
    job = services.submit_job(user=user, kind="hipify-scan", project=project, source=source)
    job.mark_queued("t")
    assert services.execute_job(job.pk, worker="w@h") == JobStatus.SUCCEEDED, (
        job.refresh_from_db() or job.error
    )
    return job.pk


def _upload(project, user, text: str, name: str = "code.zip", lineage: str = "", files=None):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, body in (files or {"src/k.cu": text}).items():
            archive.writestr(path, body)
    buffer.seek(0)
    snapshot = add_upload(project, buffer, name, user, lineage=lineage)
    extract_upload(snapshot.pk)  # what the worker does after the commit
    snapshot.refresh_from_db()
    return snapshot


@needs_hipify
@pytest.mark.process
def test_the_report_shows_totals_top_unsupported_with_locations_and_the_burn_down(user, team):
    project = make_project(team, "solver")
    _upload(project, user, CUDA)
    first = _scan(user, project)
    # The team ports the unsupported call away; the re-scan shows the burn-down.
    _upload(project, user, CUDA.replace("  cudaGraphExecNodeSetParams(0, 0, 0);\n", ""))
    second = _scan(user, project)

    client = Client()
    client.force_login(user)
    html = client.get(f"/projects/{project.pk}/porting/").content.decode()
    assert f'/jobs/{second}/">job {second}</a>' in html  # the report is of the newest scan
    assert (
        "cudaGraphExecNodeSetParams" not in html.split("What HIP lacks")[1].split("</section>")[0]
    )
    assert "texture" in html and "src/k.cu:3" in html  # the removed texture reference, at its line
    assert "Burn-down" in html and "<svg" in html
    report = client.get(f"/api/v1/projects/{project.pk}/porting-report/").json()
    points = report["burn_down"]
    assert [p["job"] for p in points] == [first, second]
    assert points[0]["unsupported"] == 1 and points[1]["unsupported"] == 0
    assert report["files"][0]["path"] == "src/k.cu"
    assert report["effort"]["formula"] and report["effort"]["inputs"]


def test_file_line_links_open_the_source_at_that_line_and_cannot_leave_the_tree(user, team):
    project = make_project(team)
    snapshot = _upload(project, user, CUDA)
    client = Client()
    client.force_login(user)
    page = client.get(
        f"/projects/{project.pk}/sources/{snapshot.pk}/file/", {"path": "src/k.cu", "line": 3}
    )
    assert page.status_code == 200 and 'id="L3" class="hl"' in page.content.decode()
    odd = client.get(
        f"/projects/{project.pk}/sources/{snapshot.pk}/file/", {"path": "src/k.cu", "line": "²"}
    )
    assert odd.status_code == 200 and 'class="hl"' not in odd.content.decode()
    escape = client.get(
        f"/projects/{project.pk}/sources/{snapshot.pk}/file/", {"path": "../../../etc/passwd"}
    )
    assert escape.status_code == 404


@needs_hipify
@pytest.mark.process
def test_the_report_downloads_as_one_html_file(user, team):
    project = make_project(team)
    _upload(project, user, CUDA)
    _scan(user, project)
    client = Client()
    client.force_login(user)
    response = client.get(f"/projects/{project.pk}/porting/", {"format": "html"})
    assert response["Content-Disposition"].startswith("attachment")
    body = response.content.decode()
    assert "<style>" in body and "Porting report" in body and "<script" not in body


def test_a_project_without_a_scan_says_what_to_do(user, team):
    client = Client()
    client.force_login(user)
    html = client.get(f"/projects/{make_project(team).pk}/porting/").content.decode()
    assert "No HIPIFY scan of this project yet" in html


def test_another_teams_report_is_404(user):
    from tests.factories import make_team

    client = Client()
    client.force_login(user)
    assert client.get(f"/projects/{make_project(make_team()).pk}/porting/").status_code == 404


@needs_hipify
@pytest.mark.process
def test_a_re_scan_of_a_project_takes_unchanged_files_from_its_cache(user, team):
    from jobs.models import Job

    project = make_project(team)
    _upload(project, user, CUDA)
    first = Job.objects.get(pk=_scan(user, project))
    second = Job.objects.get(pk=_scan(user, project))
    assert first.summary["incremental"]["examined"] == 1
    assert second.summary["incremental"]["examined"] == 0
    assert second.summary["incremental"]["cached"] == 1


@needs_hipify
@pytest.mark.process
def test_the_file_table_reads_the_small_files_json_and_older_scans_findings_json(user, team):
    from jobs.models import Artifact
    from jobs.services import artifact_file

    project = make_project(team)
    _upload(project, user, CUDA)
    job = _scan(user, project)
    client = Client()
    client.force_login(user)
    url = f"/api/v1/projects/{project.pk}/porting-report/"
    expected = client.get(url).json()["files"]
    assert [(f["path"], f["unsupported"], f["removed"]) for f in expected] == [("src/k.cu", 1, 1)]
    findings = artifact_file(Artifact.objects.get(job_id=job, path="hipify/findings.json"))
    kept = findings.read_text()
    findings.write_text("not JSON: the file table must not need it")
    assert client.get(url).json()["files"] == expected
    # a scan from before files.json existed: the table comes from findings.json
    findings.write_text(kept)
    Artifact.objects.filter(job_id=job, path="hipify/files.json").delete()
    assert client.get(url).json()["files"] == expected


@needs_hipify
@pytest.mark.process
def test_a_file_table_nested_too_deep_is_skipped_not_a_500(user, team):
    from jobs.models import Artifact
    from jobs.services import artifact_file

    project = make_project(team)
    _upload(project, user, CUDA)
    job = _scan(user, project)
    for path in ("hipify/files.json", "hipify/findings.json"):
        artifact_file(Artifact.objects.get(job_id=job, path=path)).write_text(
            '{"files": ' + "[" * 100_000 + "]" * 100_000 + "}"
        )
    client = Client()
    client.force_login(user)
    response = client.get(f"/api/v1/projects/{project.pk}/porting-report/")
    assert response.status_code == 200
    assert response.json()["files"] == []


@needs_hipify
@pytest.mark.process
def test_the_file_table_comes_a_page_at_a_time_and_the_download_holds_every_file(
    user, team, monkeypatch
):
    import portal.views

    monkeypatch.setattr(portal.views, "FILES_PER_PAGE", 2)
    project = make_project(team)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in ("a.cu", "b.cu", "c.cu"):
            archive.writestr(f"src/{name}", CUDA)
    buffer.seek(0)
    extract_upload(add_upload(project, buffer, "code.zip", user).pk)
    _scan(user, project)
    client = Client()
    client.force_login(user)
    url = f"/projects/{project.pk}/porting/"

    def table(html: str) -> list[str]:
        body = html.split('id="files"')[1]
        return [p for p in ("src/a.cu", "src/b.cu", "src/c.cu") if f">{p}</a>" in body]

    first = client.get(url, {"sort": "path", "dir": "asc"}).content.decode()
    assert table(first) == ["src/a.cu", "src/b.cu"]
    assert "files 1\u20132 of 3" in first and "sort=path&dir=asc&page=2" in first
    second = client.get(url, {"sort": "path", "dir": "asc", "page": 2}).content.decode()
    assert table(second) == ["src/c.cu"] and 'rel="prev"' in second
    download = client.get(url, {"format": "html"}).content.decode()
    assert table(download) == ["src/a.cu", "src/b.cu", "src/c.cu"]
    assert 'class="pager"' not in download
    # An unknown column sorts as the default does, and the page says so.
    bogus = client.get(url, {"sort": "bogus"}).content.decode()
    assert "HIP lacks (in code) ▼</a>" in bogus and "sort=bogus" not in bogus
    assert "sort=unsupported&dir=desc&page=2" in bogus


def test_a_projects_target_gpus_give_the_architectures_it_is_compiled_for(team):
    project = make_project(team)
    project.target_gpus = ["MI300X", "gfx90a", "H200", "MI325X", "gfx1100", "a GPU we sell"]
    assert project.compile_targets() == ["gfx942", "gfx90a", "gfx1100"]
    project.target_gpus = ["H200"]
    assert project.compile_targets() == ["gfx942"]  # nothing AMD named: the MI300X class


def test_only_targets_the_compile_check_accepts_are_offered(team):
    from stack.kinds import validate_params

    project = make_project(team)
    # Not the compile check's pattern: a feature without its +/- and a family name.
    project.target_gpus = ["gfx90a:xnack", "gfx9", "GFX90A:xnack+", "gfx1100"]
    assert project.compile_targets() == ["gfx90a:xnack+", "gfx1100"]
    validate_params("compile-check", {"targets": project.compile_targets()})
    project.target_gpus = ["gfx90a:xnack", "gfx9"]
    assert project.compile_targets() == ["gfx942"]  # the compile check's own default


@pytest.mark.process
def test_the_project_page_starts_each_porting_step_on_the_newest_source(user, team):
    from jobs.models import Job
    from teams.models import SourceSnapshot

    project = make_project(team)
    project.target_gpus = ["MI250X"]
    project.save()
    client = Client()
    client.force_login(user)
    url = f"/projects/{project.pk}/steps/"
    page = client.get(f"/projects/{project.pk}/").content.decode()
    assert "Add the code first" in page and 'data-step="hipify-scan"' not in page
    refused = client.post(url, {"kind": "hipify-scan"}, follow=True).content.decode()
    assert "Not submitted" in refused and "has no source code yet" in refused
    # A clone still under way is no source to run on yet.
    SourceSnapshot.objects.create(project=project, origin="git", name="https://example.com/r")
    page = client.get(f"/projects/{project.pk}/").content.decode()
    assert "No source is ready yet" in page and 'data-step="hipify-scan"' not in page
    source = _upload(project, user, CUDA)
    page = client.get(f"/projects/{project.pk}/").content.decode()
    assert 'data-step="compile-check">Compile check (gfx90a)' in page
    response = client.post(url, {"kind": "compile-check"})
    job = Job.objects.get()
    assert response["Location"] == f"/jobs/{job.pk}/"
    assert (job.kind, job.project, job.source, job.params["targets"]) == (
        "compile-check",
        project,
        source,
        ["gfx90a"],
    )
    assert client.post(url, {"kind": "blas-bench"}).status_code == 404


def test_a_viewer_cannot_start_a_porting_step(team):
    from jobs.models import Job
    from teams.choices import Role
    from tests.factories import add_member, make_user

    viewer = make_user("vera")
    add_member(team, viewer, Role.VIEWER)
    project = make_project(team)
    client = Client()
    client.force_login(viewer)
    assert "Porting steps" not in client.get(f"/projects/{project.pk}/").content.decode()
    client.post(f"/projects/{project.pk}/steps/", {"kind": "hipify-scan"})
    assert not Job.objects.exists()


@needs_hipify
@pytest.mark.process
def test_a_scan_of_another_tree_starts_its_own_lineage_and_the_burn_down_never_mixes_them(
    user, team
):
    project = make_project(team, "solver")
    _upload(project, user, CUDA, name="solver-1.0.zip")
    first = _scan(user, project)
    # An unrelated tree with nothing unsupported: not "the solver is fully ported".
    other = _upload(project, user, "__global__ void k() {}\n", name="other.zip")
    second = _scan(user, project, source=other)  # not the current code: named
    client = Client()
    client.force_login(user)
    api = f"/api/v1/projects/{project.pk}/porting-report/"
    report = client.get(api).json()
    assert report["lineage"]["key"] == "upload other"
    assert [p["job"] for p in report["burn_down"]] == [second]
    assert report["lineage"]["others"] == [
        {"key": "upload solver", "scans": 1, "newest_job": first}
    ]
    # The next version of the solver (its name's version differs) continues its lineage.
    _upload(
        project,
        user,
        CUDA.replace("  cudaGraphExecNodeSetParams(0, 0, 0);\n", ""),
        name="solver-1.1.zip",
    )
    third = _scan(user, project)
    # So does an upload the team names explicitly, whatever its file is called.
    _upload(project, user, CUDA, name="x.zip", lineage="upload solver")
    fourth = _scan(user, project)
    report = client.get(api).json()
    assert report["lineage"]["key"] == "upload solver"
    assert [p["job"] for p in report["burn_down"]] == [first, third, fourth]
    assert [p["unsupported"] for p in report["burn_down"]] == [1, 0, 1]
    older = client.get(api, {"lineage": "upload other"}).json()
    assert older["scan"]["job"] == second and [p["job"] for p in older["burn_down"]] == [second]
    page = client.get(f"/projects/{project.pk}/porting/").content.decode()
    assert "Lineage <b>upload solver</b>" in page and "?lineage=upload%20other" in page


@needs_hipify
@pytest.mark.process
def test_the_page_counts_what_hip_lacks_as_the_gates_and_the_report_count_it(user, team):
    """One count everywhere: the page's tile showed hipify's per-kind totals (vendored
    files, comments) beside the gate's count ("350 unsupported" vs 236)."""
    from roadmap.criteria import Facts
    from roadmap.report import roadmap_document
    from tests.roadmap.conftest import GAPS_CU

    project = make_project(team, "reduce")
    _upload(project, user, "", files={"src/reduce.cu": GAPS_CU, "third_party/r.cu": GAPS_CU})
    _scan(user, project)
    counted = Facts(project).unsupported_in_code
    # The shuffle and the graph call in the project's own file; the copy under
    # third_party/ and the comment's cuTexRefSetArray are not counted.
    assert counted == 2
    assert roadmap_document(project)["porting"]["unsupported_in_code"] == counted
    client = Client()
    client.force_login(user)
    html = client.get(f"/projects/{project.pk}/porting/").content.decode()
    tile = html.split('id="lacking"><b>')[1]
    assert tile.startswith(f"{counted}</b>")
    assert "1 unsupported, 0 removed, 1 device functions" in tile.split("</div>")[0]
