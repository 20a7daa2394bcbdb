"""Project sources: safe extraction of uploads and git clones by a worker task."""

from __future__ import annotations

import os
import subprocess
import tarfile
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from teams import gitintake
from teams.archives import SourceError
from teams.choices import Role
from teams.models import SourceSnapshot
from teams.sources import clone, extract_upload, tree_of
from tests.archives import KERNEL, tar_bytes, tar_entry, zip_bytes
from tests.factories import add_member, make_project, make_team, make_user


@pytest.fixture
def project(team):
    return make_project(team, "solver")


def upload(api, project, name: str, data: bytes):
    """POST the archive, then do what the worker does after the commit: extract it."""
    archive = SimpleUploadedFile(name, data, content_type="application/octet-stream")
    response = api.post(
        f"/api/v1/projects/{project.pk}/sources/", {"archive": archive}, format="multipart"
    )
    if response.status_code == 201:
        extract_upload(response.json()["id"])
    return response


def nothing_on_disk(settings) -> bool:
    root = Path(settings.ARTIFACT_ROOT) / "sources"
    leftovers = [p for p in root.rglob("*")] if root.exists() else []
    return leftovers == [] and not SourceSnapshot.objects.exists()


def test_a_tar_gz_upload_becomes_the_projects_newest_source(api, project):
    data = tar_bytes([(tar_entry("src/", tarfile.DIRTYPE), None), (tar_entry("src/k.cu"), KERNEL)])
    response = upload(api, project, "code.tar.gz", data)
    assert response.status_code == 201, response.content
    snapshot = SourceSnapshot.objects.get()
    assert snapshot.status == "ready" and snapshot.file_count == 1
    assert (tree_of(snapshot) / "src" / "k.cu").read_bytes() == KERNEL
    listed = api.get(f"/api/v1/projects/{project.pk}/sources/").json()["results"]
    assert [s["id"] for s in listed] == [snapshot.pk]


def test_a_zip_upload_with_an_inside_symlink_is_accepted(api, project):
    data = zip_bytes({"a/k.cu": KERNEL}, symlinks={"a/link.cu": "k.cu"})
    assert upload(api, project, "code.zip", data).status_code == 201
    tree = tree_of(SourceSnapshot.objects.get())
    assert (tree / "a" / "link.cu").read_bytes() == KERNEL


@pytest.mark.parametrize(
    ("name", "data", "member"),
    [
        ("slip.zip", zip_bytes({"../../evil.cu": KERNEL}), "../../evil.cu"),
        ("abs.tar.gz", tar_bytes([(tar_entry("/etc/evil"), KERNEL)]), "/etc/evil"),
        ("dots.tar.gz", tar_bytes([(tar_entry("a/../../evil"), KERNEL)]), "a/../../evil"),
        (
            "symlink.tar.gz",
            tar_bytes([(tar_entry("link", tarfile.SYMTYPE, linkname="/etc/passwd"), None)]),
            "link",
        ),
        (
            "symlink-up.tar.gz",
            tar_bytes([(tar_entry("a/link", tarfile.SYMTYPE, linkname="../../x"), None)]),
            "a/link",
        ),
        ("symlink.zip", zip_bytes({}, symlinks={"link": "../../../etc/passwd"}), "link"),
        (
            "hardlink.tar.gz",
            tar_bytes([(tar_entry("h", tarfile.LNKTYPE, linkname="../../etc/passwd"), None)]),
            "h",
        ),
        ("device.tar.gz", tar_bytes([(tar_entry("dev", tarfile.CHRTYPE), None)]), "dev"),
    ],
)
def test_a_malicious_archive_is_refused_naming_the_member_and_leaves_nothing(
    api, project, settings, name, data, member
):
    response = upload(api, project, name, data)
    assert response.status_code == 400
    assert member in response.json()["archive"][0]
    assert nothing_on_disk(settings)


def test_a_zip_bomb_is_refused_by_its_compression_ratio(api, project, settings):
    bomb = zip_bytes({"zeros.bin": b"\0" * (50 * 1024 * 1024)})
    assert len(bomb) < 1024 * 1024
    response = upload(api, project, "bomb.zip", bomb)
    assert response.status_code == 400 and "compression ratio" in response.json()["archive"][0]
    assert nothing_on_disk(settings)


def test_an_archive_over_the_size_limit_is_refused(api, project, settings):
    settings.ROCPATH_SOURCE_MAX_BYTES = 1000
    data = tar_bytes([(tar_entry("big.cu"), os.urandom(2000))])
    response = upload(api, project, "big.tar.gz", data)
    assert response.status_code == 400 and "more than 1000 bytes" in response.json()["archive"][0]
    assert nothing_on_disk(settings)


def test_too_many_files_are_refused(api, project, settings):
    settings.ROCPATH_SOURCE_MAX_FILES = 10
    data = zip_bytes({f"f{i}.cu": KERNEL for i in range(11)})
    response = upload(api, project, "many.zip", data)
    assert response.status_code == 400 and "more than 10 files" in response.json()["archive"][0]
    assert nothing_on_disk(settings)


def test_something_that_is_not_an_archive_is_refused(api, project, settings):
    response = upload(api, project, "code.tar.gz", b"this is not gzip")
    assert response.status_code == 400 and "not a readable tar" in response.json()["archive"][0]
    response = upload(api, project, "code.rar", b"Rar!")
    assert response.status_code == 400
    assert nothing_on_disk(settings)


def test_sending_both_or_neither_an_archive_and_a_git_url_is_a_400(api, project):
    assert api.post(f"/api/v1/projects/{project.pk}/sources/", {}, format="json").status_code == 400


def test_a_viewer_cannot_add_sources_and_other_teams_projects_are_404(api, team):
    other = make_project(make_team())
    assert upload(api, other, "x.zip", zip_bytes({"k.cu": KERNEL})).status_code == 404
    viewer = make_user()
    add_member(team, viewer, Role.VIEWER)
    client = APIClient()
    client.force_authenticate(viewer)
    project = make_project(team)
    assert upload(client, project, "x.zip", zip_bytes({"k.cu": KERNEL})).status_code == 403


def _git_repo(path: Path) -> Path:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    path.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True, env=env)
    (path / "k.cu").write_bytes(KERNEL)
    subprocess.run(["git", "-C", str(path), "add", "."], check=True, env=env)
    subprocess.run(["git", "-C", str(path), "commit", "-qm", "k"], check=True, env=env)
    return path


@pytest.mark.process
def test_a_git_source_from_an_allowlisted_path_is_cloned_by_the_worker_task(
    api, project, settings, tmp_path, django_capture_on_commit_callbacks, monkeypatch
):
    repo = _git_repo(tmp_path / "repo")
    settings.ROCPATH_GIT_LOCAL_ALLOW = {project.team.slug: [str(tmp_path)]}
    cloned: list[tuple[str, int]] = []
    monkeypatch.setattr("teams.sources.queue_task", lambda *task, **options: cloned.append(task))
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(
            f"/api/v1/projects/{project.pk}/sources/",
            {"git_url": f"file://{repo}", "ref": "main"},
            format="json",
        )
    assert response.status_code == 201 and response.json()["status"] == "pending"
    snapshot = SourceSnapshot.objects.get()
    assert cloned == [("teams.fetch_git_source", snapshot.pk)]
    clone(snapshot)  # what the worker task does
    snapshot.refresh_from_db()
    assert snapshot.status == "ready", snapshot.error
    assert len(snapshot.commit) == 40 and snapshot.file_count == 1
    assert (tree_of(snapshot) / "k.cu").read_bytes() == KERNEL
    assert not (tree_of(snapshot) / ".git").exists()


@pytest.mark.process
def test_a_git_ref_that_does_not_exist_fails_the_snapshot_with_gits_words(
    project, settings, tmp_path
):
    repo = _git_repo(tmp_path / "repo")
    settings.ROCPATH_GIT_LOCAL_ALLOW = {project.team.slug: [str(tmp_path)]}
    snapshot = SourceSnapshot.objects.create(
        project=project, origin="git", name=str(repo), ref="no-such-branch"
    )
    clone(snapshot)
    snapshot.refresh_from_db()
    assert snapshot.status == "failed" and "no-such-branch" in snapshot.error


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://140.82.121.3/org/repo.git", True),  # a global address: no DNS in tests
        ("http://140.82.121.3/org/repo.git", False),
        ("git@github.com:org/repo.git", False),  # ssh: no key for the team
        ("file:///srv/allowed/repo", True),
        ("file:///srv/other/repo", False),
        ("/etc", False),
        ("ftp://example.com/repo", False),
        ("ext::sh -c touch% /tmp/x", False),
    ],
)
def test_which_git_urls_may_be_cloned(settings, url, allowed, tmp_path):
    for folder in ("allowed", "other"):  # a bare repository's bones in each
        (tmp_path / folder / "repo" / "objects").mkdir(parents=True)
        (tmp_path / folder / "repo" / "HEAD").write_text("ref: refs/heads/main\n")
    settings.ROCPATH_GIT_LOCAL_ALLOW = {"alpha": [str(tmp_path / "allowed")]}
    try:
        gitintake.check_url(url.replace("/srv/", f"{tmp_path}/"), "alpha")
    except SourceError:
        assert not allowed
    else:
        assert allowed


def test_a_local_path_outside_the_allowlist_is_a_400(api, project, settings):
    settings.ROCPATH_GIT_LOCAL_ALLOW = {}
    response = api.post(
        f"/api/v1/projects/{project.pk}/sources/", {"git_url": "/etc"}, format="json"
    )
    assert (
        response.status_code == 400 and "ROCPATH_GIT_LOCAL_ALLOW" in response.json()["git_url"][0]
    )


def test_a_project_is_created_through_the_api(api, team):
    response = api.post(
        "/api/v1/projects/",
        {"team": team.slug, "name": "lbm", "target_gpus": ["MI300X"]},
        format="json",
    )
    assert response.status_code == 201 and response["Location"].endswith(
        f"/{response.json()['id']}/"
    )
    again = api.post("/api/v1/projects/", {"team": team.slug, "name": "lbm"}, format="json")
    assert again.status_code == 400 and "name" in again.json()


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("empty.tar.gz", tar_bytes([])),
        ("docs.zip", zip_bytes({"README.md": b"# notes", "setup.py": b"print()"})),
        # A .cu file only inside a VCS folder, which the scan skips.
        ("vcs.zip", zip_bytes({".git/hooks/k.cu": KERNEL, "notes.txt": b"x"})),
    ],
)
def test_an_archive_without_a_cuda_relevant_file_is_refused_saying_why(
    api, project, settings, name, data
):
    response = upload(api, project, name, data)
    assert response.status_code == 400
    message = response.json()["archive"][0]
    assert "no CUDA-relevant file" in message and ".cu" in message and name in message
    assert nothing_on_disk(settings)


@pytest.mark.process
def test_a_git_repository_without_a_cuda_relevant_file_fails_saying_why(
    project, settings, tmp_path
):
    repo = _git_repo(tmp_path / "repo")
    subprocess.run(["git", "-C", str(repo), "rm", "-q", "k.cu"], check=True)
    (repo / "README.md").write_text("docs only")
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "d"],
        check=True,
    )
    settings.ROCPATH_GIT_LOCAL_ALLOW = {project.team.slug: [str(tmp_path)]}
    snapshot = SourceSnapshot.objects.create(
        project=project, origin="git", name=str(repo), ref="main"
    )
    clone(snapshot)
    snapshot.refresh_from_db()
    assert snapshot.status == "failed" and "no CUDA-relevant file" in snapshot.error


@pytest.mark.parametrize(
    ("origin", "name", "lineage"),
    [
        ("upload", "solver-1.2.3.tar.gz", "upload solver"),
        ("upload", "solver_v2.zip", "upload solver"),
        ("upload", "solver-20260101.tgz", "upload solver"),
        ("upload", "solver-1.0-rc1.zip", "upload solver"),
        ("upload", "solver.zip", "upload solver"),
        ("upload", "other.zip", "upload other"),
        ("upload", "2026.zip", "upload 2026"),
        ("git", "https://GitHub.com/org/Solver.git/", "git https://github.com/org/Solver"),
        ("git", "https://github.com/org/Solver", "git https://github.com/org/Solver"),
    ],
)
def test_a_lineage_is_the_repository_or_the_archive_name_without_its_version(origin, name, lineage):
    assert SourceSnapshot(origin=origin, name=name).lineage_key == lineage
    assert SourceSnapshot(origin=origin, name=name, lineage=" mine ").lineage_key == "mine"


def test_a_source_takes_the_lineage_its_team_names(api, project):
    archive = SimpleUploadedFile("x.zip", zip_bytes({"k.cu": KERNEL}))
    response = api.post(
        f"/api/v1/projects/{project.pk}/sources/",
        {"archive": archive, "lineage": "solver"},
        format="multipart",
    )
    assert response.status_code == 201
    assert response.json()["lineage"] == "solver" == response.json()["lineage_key"]
