"""Archive intake: what a hostile upload tries, each refused with the member named, nothing
landing outside the tree and nothing left behind (issue 9, findings 1, 2 and 9)."""

from __future__ import annotations

import io
import os
import stat
import tarfile
import time
import zipfile
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from teams.models import SourceSnapshot
from tests.archives import KERNEL, tar_bytes, tar_entry, zip_bytes


def upload(api, project, name: str, data: bytes):
    archive = SimpleUploadedFile(name, data, content_type="application/octet-stream")
    return api.post(
        f"/api/v1/projects/{project.pk}/sources/", {"archive": archive}, format="multipart"
    )


def extract_pending() -> None:
    """What the worker does after the upload's commit (before issue 9 the request did it)."""
    try:
        from teams.sources import extract_upload
    except ImportError:
        return

    for pk in SourceSnapshot.objects.filter(status="pending").values_list("pk", flat=True):
        extract_upload(pk)


def refused(response, *names: str) -> str:
    """The refusal's text, after checking it is a 400 that quotes one of the members."""
    assert response.status_code == 400, response.content
    message = response.json()["archive"][0]
    assert any(name in message for name in names), message
    return message


def nothing_kept(settings) -> bool:
    root = Path(settings.ARTIFACT_ROOT) / "sources"
    return not SourceSnapshot.objects.exists() and not (root.exists() and any(root.iterdir()))


@pytest.fixture
def project(team):
    from tests.factories import make_project

    return make_project(team, "solver")


@pytest.fixture
def outside(tmp_path) -> Path:
    """A folder the web user can write to, far from the artifact root: the attacker's goal."""
    folder = tmp_path / "outside"
    folder.mkdir()
    return folder


def planted_anywhere(outside: Path) -> list[Path]:
    return [p for p in outside.rglob("*")]


# --- links ------------------------------------------------------------------------
def test_a_zip_with_chained_symlinks_cannot_write_outside_and_is_refused_naming_the_link(
    api, project, settings, outside
):
    # Finding 1: a deep link whose "../" x 20 stays inside as text, a second link that
    # goes through it and further up (inside as text too), a file written through both.
    deep = "/".join(f"d{i}" for i in range(20))
    data = zip_bytes(
        {"pivot/planted.cu": KERNEL},
        symlinks={
            f"{deep}/up": "../" * 20,
            "pivot": f"{deep}/up/" + "../" * 20 + str(outside).lstrip("/"),
        },
    )
    response = upload(api, project, "chain.zip", data)
    extract_pending()
    assert planted_anywhere(outside) == []
    refused(response, "'pivot'", "pivot/planted.cu")
    assert nothing_kept(settings)


def test_a_link_through_a_link_to_a_file_inside_is_kept(api, project):
    data = zip_bytes({"src/k.cu": KERNEL}, symlinks={"src/alias": "k.cu", "top": "src/alias"})
    assert upload(api, project, "links.zip", data).status_code == 201
    extract_pending()
    snapshot = SourceSnapshot.objects.get()
    assert snapshot.status == "ready", snapshot.error
    tree = Path(settings_root()) / str(snapshot.pk) / "tree"
    assert (tree / "top").read_bytes() == KERNEL and os.readlink(tree / "top") == "src/alias"


def settings_root() -> str:
    from django.conf import settings

    return str(Path(settings.ARTIFACT_ROOT) / "sources")


def cve_2025_4517_tar(outside: Path) -> tuple[bytes, list[str]]:
    """The public proof of concept's shape: folders with 247-character names, a one-letter
    link to each, a link at the end of the one-letter chain climbing back, and a link
    through all of it whose text looks inside but whose real path (past PATH_MAX, where
    realpath gives up) leaves; then a member written through it."""
    comp = "d" * 247
    steps = "abcdefghijklmnop"
    members: list[tuple[tarfile.TarInfo, bytes | None]] = []
    path = ""
    links = []
    for step in steps:
        members.append((tar_entry(os.path.join(path, comp), tarfile.DIRTYPE), None))
        link = os.path.join(path, step)
        members.append((tar_entry(link, tarfile.SYMTYPE, comp), None))
        links.append(link)
        path = os.path.join(path, comp)
    linkpath = os.path.join(*steps, "l" * 254)
    members.append((tar_entry(linkpath, tarfile.SYMTYPE, "../" * len(steps)), None))
    # As text: 17 names deep, 16 up, so inside. Really: the long link is the tree itself,
    # so 16 times ".." reaches "/" (the tree is less deep than that), then the target.
    escape = linkpath + "/.." * len(steps) + str(outside)
    members.append((tar_entry("escape", tarfile.SYMTYPE, escape), None))
    members.append((tar_entry("escape/planted.cu"), KERNEL))
    return tar_bytes(members), [*links, linkpath, "escape"]


def test_the_cve_2025_4517_tar_writes_nothing_outside_and_is_a_400_naming_a_member(
    api, project, settings, outside
):
    data, links = cve_2025_4517_tar(outside)
    response = upload(api, project, "poc.tar.gz", data)  # was a 500 (ENAMETOOLONG in _count)
    extract_pending()
    assert planted_anywhere(outside) == []
    refused(response, *links)
    assert nothing_kept(settings)


def test_a_hard_link_becomes_a_copy_and_one_to_a_link_is_refused(api, project, settings):
    data = tar_bytes(
        [
            (tar_entry("k.cu"), KERNEL),
            (tar_entry("copy.cu", tarfile.LNKTYPE, "k.cu"), None),
        ]
    )
    assert upload(api, project, "hard.tar.gz", data).status_code == 201
    extract_pending()
    snapshot = SourceSnapshot.objects.get()
    tree = Path(settings_root()) / str(snapshot.pk) / "tree"
    assert (tree / "copy.cu").read_bytes() == KERNEL
    assert os.stat(tree / "copy.cu").st_nlink == 1  # a copy, not a second name
    bad = tar_bytes(
        [
            (tar_entry("l", tarfile.SYMTYPE, "k.cu"), None),
            (tar_entry("k.cu"), KERNEL),
            (tar_entry("h", tarfile.LNKTYPE, "l"), None),
        ]
    )
    refused(upload(api, project, "hard-to-link.tar.gz", bad), "'h'")


# --- names and types --------------------------------------------------------------
def _zip_with_raw_name(placeholder: str, raw: bytes) -> bytes:
    data = zip_bytes({placeholder: KERNEL})
    assert len(placeholder.encode()) == len(raw)
    return data.replace(placeholder.encode(), raw)


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("tar-nul", tar_bytes([(tar_entry("planted.cu\x00.txt"), KERNEL)])),
        ("zip-nul", _zip_with_raw_name("plantedXcu.txt", b"planted\x00cu.txt")),
        (
            "tar-long-nul",
            tar_bytes([(tar_entry("planted" * 20 + "\x00.txt"), KERNEL)], fmt=tarfile.GNU_FORMAT),
        ),
        ("tar-newline", tar_bytes([(tar_entry("planted\nfake.cu"), KERNEL)])),
        ("zip-newline", zip_bytes({"planted\nfake.cu": KERNEL})),
        ("tar-rtl", tar_bytes([(tar_entry("planted\u202ecod.cu"), KERNEL)])),
        ("zip-rtl", zip_bytes({"planted\u202ecod.cu": KERNEL})),
        (
            "tar-not-utf8",
            tar_bytes([(tar_entry("planted\udcff.cu"), KERNEL)], fmt=tarfile.GNU_FORMAT),
        ),
        ("zip-not-utf8", _zip_with_raw_name("plantedX.cu", b"planted\xff.cu")),
        ("tar-backslash", tar_bytes([(tar_entry("planted\\..\\k.cu"), KERNEL)])),
        ("zip-backslash", zip_bytes({"planted\\k.cu": KERNEL})),
    ],
)
def test_a_member_name_that_hides_what_it_is_is_refused_naming_it(
    api, project, settings, name, data
):
    suffix = ".zip" if name.startswith("zip") else ".tar.gz"
    refused(upload(api, project, name + suffix, data), "planted")
    assert nothing_kept(settings)


def test_a_zip_character_device_is_refused_not_extracted_as_a_file(api, project, settings):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        info = zipfile.ZipInfo("tty0")
        info.create_system = 3
        info.external_attr = (stat.S_IFCHR | 0o666) << 16
        archive.writestr(info, b"")
    message = refused(upload(api, project, "dev.zip", buffer.getvalue()), "tty0")
    assert "character device" in message
    assert nothing_kept(settings)


def test_a_fifo_in_a_tar_is_refused(api, project, settings):
    # Refused before the fix too; kept so that the rewrite cannot lose it.
    data = tar_bytes([(tar_entry("pipe", tarfile.FIFOTYPE), None)])
    refused(upload(api, project, "fifo.tar.gz", data), "pipe")
    assert nothing_kept(settings)


# --- volume, quotas, the worker ---------------------------------------------------
def test_many_tiny_files_are_refused_by_the_teams_file_quota(api, project, settings):
    settings.ROCPATH_TEAM_SOURCE_MAX_FILES = 50
    first = zip_bytes({f"a/f{i}.cu": b"x" for i in range(30)})
    assert upload(api, project, "first.zip", first).status_code == 201
    extract_pending()
    second = zip_bytes({f"b/f{i}.cu": b"x" for i in range(30)})
    message = refused(upload(api, project, "second.zip", second), "b/f")
    assert "more than 20 files" in message and "team" in message
    assert SourceSnapshot.objects.count() == 1


def test_the_teams_byte_quota_and_source_count_are_enforced(api, project, settings):
    settings.ROCPATH_TEAM_SOURCE_MAX_BYTES = 3000
    settings.ROCPATH_TEAM_SOURCES_MAX = 2
    assert upload(api, project, "a.zip", zip_bytes({"a.cu": os.urandom(2000)})).status_code == 201
    big = refused(upload(api, project, "b.zip", zip_bytes({"b.cu": os.urandom(2000)})), "b.cu")
    assert "more than 1000 bytes" in big
    assert upload(api, project, "c.zip", zip_bytes({"c.cu": b"x"})).status_code == 201
    response = upload(api, project, "d.zip", zip_bytes({"d.cu": b"x"}))
    assert (
        response.status_code == 400 and "ROCPATH_TEAM_SOURCES_MAX" in response.json()["archive"][0]
    )


def test_the_upload_is_extracted_by_the_worker_not_by_the_request(api, project, settings):
    from teams.sources import extract_upload, tree_of

    response = upload(api, project, "code.zip", zip_bytes({"src/k.cu": KERNEL}))
    assert response.status_code == 201 and response.json()["status"] == "pending"
    snapshot = SourceSnapshot.objects.get()
    assert snapshot.status_label == "Extracting…"
    assert not tree_of(snapshot).exists()  # the request wrote only the archive
    extract_upload(snapshot.pk)
    snapshot.refresh_from_db()
    assert snapshot.status == "ready" and snapshot.file_count == 1
    assert (tree_of(snapshot) / "src" / "k.cu").read_bytes() == KERNEL
    assert sorted(p.name for p in tree_of(snapshot).parent.iterdir()) == ["tree"]


def test_the_worker_checks_again_and_fails_the_source_with_the_refusal(api, project, settings):
    from teams.sources import extract_upload, snapshot_dir

    assert (
        upload(
            api, project, "code.zip", zip_bytes({f"f{i}.cu": b"x" for i in range(5)})
        ).status_code
        == 201
    )
    snapshot = SourceSnapshot.objects.get()
    settings.ROCPATH_SOURCE_MAX_FILES = 3  # the limits changed before the worker ran
    extract_upload(snapshot.pk)
    snapshot.refresh_from_db()
    assert snapshot.status == "failed" and "more than 3 files" in snapshot.error
    assert not snapshot_dir(snapshot.pk).exists()
    page = api.get(f"/api/v1/projects/{project.pk}/sources/").json()["results"][0]
    assert page["status"] == "failed" and "more than 3 files" in page["error"]


def test_what_a_killed_process_left_behind_is_reaped(api, project, settings):
    from teams.sources import snapshot_dir, sources_root
    from teams.tasks import reap_source_staging

    settings.ROCPATH_SOURCE_STAGING_GRACE_S = 3700
    old = time.time() - 4000
    assert upload(api, project, "code.zip", zip_bytes({"k.cu": KERNEL})).status_code == 201
    ready = SourceSnapshot.objects.get()
    extract_pending()
    # A worker killed mid-extraction: its half-written staging folder beside the tree.
    half = snapshot_dir(ready.pk) / ".extract-0123456789ab"
    (half / "src").mkdir(parents=True)
    (half / "src" / "half.cu").write_bytes(b"__glo")
    # A web process killed mid-upload: the received archive, and a folder whose row
    # never committed.
    upload_left = sources_root() / ".upload-deadbeef"
    upload_left.write_bytes(b"PK")
    orphan = sources_root() / "999999"
    orphan.mkdir()
    # A source the lost worker never finished.
    lost = SourceSnapshot.objects.create(project=project, origin="upload", name="lost.zip")
    SourceSnapshot.objects.filter(pk=lost.pk).update(
        created_at=ready.created_at - __import__("datetime").timedelta(hours=3)
    )
    snapshot_dir(lost.pk).mkdir()
    (snapshot_dir(lost.pk) / "archive.zip").write_bytes(b"PK")
    # One still in progress, young: left alone.
    young = SourceSnapshot.objects.create(project=project, origin="upload", name="young.zip")
    (snapshot_dir(young.pk) / ".extract-young").mkdir(parents=True)
    for path in (upload_left, orphan, snapshot_dir(lost.pk)):
        os.utime(path, (old, old))

    reap_source_staging()

    assert not half.exists() and not upload_left.exists() and not orphan.exists()
    lost.refresh_from_db()
    assert lost.status == "failed" and "worker was lost" in lost.error
    assert not snapshot_dir(lost.pk).exists()
    assert (snapshot_dir(young.pk) / ".extract-young").exists()
    assert (snapshot_dir(ready.pk) / "tree" / "k.cu").read_bytes() == KERNEL


def test_a_100000_member_archive_is_read_past_a_budget_only_by_the_worker(
    api, project, settings, monkeypatch
):
    from teams import archives

    settings.ROCPATH_TEAM_SOURCE_MAX_FILES = 50_000
    settings.ROCPATH_UPLOAD_SURVEY_MEMBERS = 2_000
    members = [(tar_entry(f"d{i % 100}/f{i}.cu"), b"") for i in range(100_000)]
    data = tar_bytes(members)
    read_in_request = []
    real_add = archives._Tree.add

    def counting_add(tree, member):
        read_in_request.append(1)
        return real_add(tree, member)

    monkeypatch.setattr(archives._Tree, "add", counting_add)
    response = upload(api, project, "many.tar.gz", data)
    # The request reads the member list only up to its budget (a second or so of a web
    # thread), then leaves the rest to the worker: 100,000 members held one 63 s.
    assert len(read_in_request) <= settings.ROCPATH_UPLOAD_SURVEY_MEMBERS + 1
    assert response.status_code == 201, response.content
    snapshot = SourceSnapshot.objects.get()
    assert snapshot.status == "pending"

    monkeypatch.setattr(archives._Tree, "add", real_add)
    extract_pending()  # the worker reads all of it and refuses it, saying why
    snapshot.refresh_from_db()
    assert snapshot.status == "failed" and "more than 50000 files" in snapshot.error
    assert not any((Path(settings.ARTIFACT_ROOT) / "sources").rglob("f1.cu"))


def test_a_user_past_their_concurrent_uploads_gets_a_429_and_nothing_is_kept(
    api, project, settings, user
):
    from teams.sources import upload_slot

    settings.ROCPATH_UPLOADS_PER_USER = 2
    data = tar_bytes([(tar_entry("k.cu"), KERNEL)])
    with upload_slot(user.pk), upload_slot(user.pk):  # two uploads of theirs being checked
        response = upload(api, project, "third.tar.gz", data)
        assert response.status_code == 429, response.content
        assert "ROCPATH_UPLOADS_PER_USER" in response.json()["detail"]
        assert nothing_kept(settings)
    assert upload(api, project, "later.tar.gz", data).status_code == 201  # slots freed
