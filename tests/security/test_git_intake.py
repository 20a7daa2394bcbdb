"""Git intake: a git URL must not make the worker connect where the team chooses, nor read
a folder it may not (issue 9, findings 3 and 4)."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest

from teams.models import SourceSnapshot
from tests.factories import make_project, make_team

KERNEL = b"__global__ void k(float* x) { x[threadIdx.x] = 0; }\n"
GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}


def git_repo(path: Path, files: dict[str, bytes] | None = None, *, bare: bool = False) -> Path:
    work = path.with_name(path.name + "-work") if bare else path
    work.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(work)], check=True, env=GIT_ENV)
    for name, data in (files or {"k.cu": KERNEL}).items():
        (work / name).write_bytes(data)
    subprocess.run(["git", "-C", str(work), "add", "."], check=True, env=GIT_ENV)
    subprocess.run(["git", "-C", str(work), "commit", "-qm", "k"], check=True, env=GIT_ENV)
    if bare:
        subprocess.run(["git", "clone", "-q", "--bare", str(work), str(path)], check=True)
    return path


def add(api, project, url: str):
    return api.post(
        f"/api/v1/projects/{project.pk}/sources/", {"git_url": url, "ref": "main"}, format="json"
    )


def clone_on_worker(project, url: str) -> SourceSnapshot:
    """What the worker does with a git source, whatever the request said about it."""
    from teams.sources import clone

    snapshot = SourceSnapshot.objects.create(project=project, origin="git", name=url, ref="main")
    clone(snapshot)
    snapshot.refresh_from_db()
    return snapshot


@pytest.fixture
def project(team):
    return make_project(team, "solver")


def connected(sock: socket.socket) -> bool:
    try:
        conn, _ = sock.accept()
    except TimeoutError:
        return False
    conn.close()
    return True


# --- local paths ------------------------------------------------------------------
@pytest.mark.process
def test_a_percent_encoded_dot_dot_cannot_leave_the_allowed_folder(
    api, project, settings, tmp_path
):
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    git_repo(tmp_path / "other", {"secret.cu": b"// another team's code\n"})
    settings.ROCPATH_GIT_LOCAL_ALLOW = {project.team.slug: [str(allowed)]}
    url = f"file://{allowed}/%2e%2e/other"
    response = add(api, project, url)
    assert (
        response.status_code == 400 and "ROCPATH_GIT_LOCAL_ALLOW" in response.json()["git_url"][0]
    )
    snapshot = clone_on_worker(project, url)
    assert snapshot.status == "failed" and "ROCPATH_GIT_LOCAL_ALLOW" in snapshot.error
    assert not list(Path(settings.ARTIFACT_ROOT).rglob("secret.cu"))


@pytest.mark.process
def test_a_team_cannot_clone_the_folder_another_team_is_allowed(api, project, settings, tmp_path):
    theirs = git_repo(tmp_path / "theirs" / "repo.git", bare=True)
    other = make_team("Beta")
    settings.ROCPATH_GIT_LOCAL_ALLOW = {other.slug: [str(tmp_path / "theirs")]}
    assert add(api, project, f"file://{theirs}").status_code == 400
    assert add(api, project, str(theirs)).status_code == 400
    assert clone_on_worker(project, f"file://{theirs}").status == "failed"


@pytest.mark.process
def test_a_team_clones_a_bare_repository_from_its_own_allowed_folder(
    api, project, settings, tmp_path, monkeypatch
):
    from teams.sources import tree_of

    repo = git_repo(tmp_path / "ours" / "repo.git", bare=True)
    settings.ROCPATH_GIT_LOCAL_ALLOW = {project.team.slug: [str(tmp_path / "ours")]}
    monkeypatch.setattr("teams.sources.queue_task", lambda *task, **options: None)
    assert add(api, project, f"file://{repo}").status_code == 201
    snapshot = SourceSnapshot.objects.get()
    from teams.sources import clone

    clone(snapshot)
    snapshot.refresh_from_db()
    assert snapshot.status == "ready", snapshot.error
    assert (tree_of(snapshot) / "k.cu").read_bytes() == KERNEL
    assert sorted(p.name for p in tree_of(snapshot).parent.iterdir()) == ["tree"]


@pytest.mark.process
def test_a_symlink_in_a_repository_is_checked_out_as_a_plain_file(project, settings, tmp_path):
    from teams.sources import tree_of

    work = tmp_path / "ours" / "repo"
    git_repo(work)
    (work / "passwd.cu").symlink_to("/etc/passwd")
    subprocess.run(["git", "-C", str(work), "add", "."], check=True, env=GIT_ENV)
    subprocess.run(["git", "-C", str(work), "commit", "-qm", "l"], check=True, env=GIT_ENV)
    settings.ROCPATH_GIT_LOCAL_ALLOW = {project.team.slug: [str(tmp_path / "ours")]}
    snapshot = clone_on_worker(project, f"file://{work}")
    assert snapshot.status == "ready", snapshot.error
    link = tree_of(snapshot) / "passwd.cu"
    assert not link.is_symlink() and link.read_text() == "/etc/passwd"


@pytest.mark.process
def test_a_clone_over_the_size_limit_is_stopped_while_it_runs(project, settings, tmp_path):
    repo = git_repo(tmp_path / "ours" / "big", {"big.bin": os.urandom(64 * 1024 * 1024)})
    settings.ROCPATH_GIT_LOCAL_ALLOW = {project.team.slug: [str(tmp_path / "ours")]}
    settings.ROCPATH_SOURCE_MAX_BYTES = 1024 * 1024
    snapshot = clone_on_worker(project, f"file://{repo}")
    assert snapshot.status == "failed" and "the clone was stopped" in snapshot.error
    assert not (Path(settings.ARTIFACT_ROOT) / "sources" / str(snapshot.pk)).exists()


# --- hosts ------------------------------------------------------------------------
@pytest.mark.parametrize("scheme", ["http", "ssh"])
@pytest.mark.process
def test_a_url_to_127_0_0_1_is_refused_and_nothing_connects(
    api, project, settings, listener, scheme, tmp_path
):
    port = listener.getsockname()[1]
    url = (
        f"{scheme}://git@127.0.0.1:{port}/x.git"
        if scheme == "ssh"
        else (f"http://127.0.0.1:{port}/x.git")
    )
    settings.ROCPATH_GIT_ALLOW_HTTP = True  # even where an operator allows http://
    key = tmp_path / "key"
    key.write_text("not a key\n")
    settings.ROCPATH_GIT_SSH_KEYS = {project.team.slug: str(key)}  # and gave the team a key
    settings.ROCPATH_GIT_SSH_KNOWN_HOSTS = str(tmp_path / "known_hosts")
    response = add(api, project, url)
    assert response.status_code == 400
    assert "a loopback address" in response.json()["git_url"][0]
    snapshot = clone_on_worker(project, url)
    assert snapshot.status == "failed" and "a loopback address" in snapshot.error
    assert not connected(listener)


@pytest.mark.process
def test_ssh_without_a_key_for_the_team_is_refused_before_any_connection(api, project, listener):
    port = listener.getsockname()[1]
    url = f"ssh://git@127.0.0.1:{port}/x.git"
    response = add(api, project, url)
    assert response.status_code == 400 and "ROCPATH_GIT_SSH_KEYS" in response.json()["git_url"][0]
    assert clone_on_worker(project, url).status == "failed"
    assert add(api, project, "git@127.0.0.1:x.git").status_code == 400
    assert not connected(listener)


@pytest.mark.process
def test_a_name_that_resolves_to_loopback_is_refused(api, project, listener):
    port = listener.getsockname()[1]
    response = add(api, project, f"https://localhost:{port}/x.git")
    assert response.status_code == 400 and "loopback" in response.json()["git_url"][0]
    assert clone_on_worker(project, f"https://localhost:{port}/x.git").status == "failed"
    assert not connected(listener)


def test_http_is_refused_unless_an_operator_allows_it(api, project):
    response = add(api, project, "http://140.82.121.3/org/repo.git")
    assert response.status_code == 400 and "http://" in response.json()["git_url"][0]


@pytest.mark.process
def test_an_allowed_internal_host_is_cloned_from_the_checked_address_within_the_time_limit(
    project, settings, listener
):
    from teams import gitintake

    port = listener.getsockname()[1]
    settings.ROCPATH_GIT_HOST_ALLOW = ["localhost"]
    settings.ROCPATH_GIT_TIMEOUT_S = 2
    source = gitintake.check_url(f"https://localhost:{port}/x.git", project.team.slug)
    argv = gitintake.clone_argv(source, "main", Path("/nowhere"))
    assert f"http.curloptResolve=localhost:{port}:{source.address}" in argv
    assert "protocol.allow=never" in argv and "protocol.https.allow=always" in argv
    # The listener accepts and never answers: the clone is stopped at the time limit.
    snapshot = clone_on_worker(project, f"https://localhost:{port}/x.git")
    assert snapshot.status == "failed" and "timed out after 2 s" in snapshot.error


def test_git_runs_without_the_workers_config_home_or_ssh(project, settings, tmp_path):
    from teams import gitintake

    settings.ROCPATH_GIT_SSH_KEYS = {project.team.slug: "/etc/rocpath/alpha.key"}
    settings.ROCPATH_GIT_SSH_KNOWN_HOSTS = "/etc/rocpath/known_hosts"
    settings.ROCPATH_GIT_HOST_ALLOW = ["10.0.0.0/8"]
    source = gitintake.check_url("ssh://git@10.1.2.3/org/repo.git", project.team.slug)
    env = gitintake.git_env(source, tmp_path)
    assert env["HOME"] == str(tmp_path) and env["GIT_CONFIG_GLOBAL"] == "/dev/null"
    assert env["GIT_CONFIG_NOSYSTEM"] == "1" and env["GIT_TERMINAL_PROMPT"] == "0"
    assert env["GIT_ASKPASS"] == "/bin/false" and "SSH_AUTH_SOCK" not in env
    ssh = env["GIT_SSH_COMMAND"]
    for option in (
        "-F /dev/null",
        "-i /etc/rocpath/alpha.key",
        "IdentitiesOnly=yes",
        "StrictHostKeyChecking=yes",
        "UserKnownHostsFile=/etc/rocpath/known_hosts",
        "HostName=10.1.2.3",
    ):
        assert option in ssh
    argv = gitintake.clone_argv(source, "main", tmp_path / "c")
    assert "core.hooksPath=/dev/null" in argv and "credential.helper=" in argv
    assert "protocol.ssh.allow=always" in argv and "core.symlinks=false" in argv


# --- a repository's own redirections (issue 37, item 2) -------------------------------
SECRET = b"// the other team's solver\n"


def redirecting_repository(how: str, ours: Path, theirs: Path) -> Path:
    """A repository in our own allowed folder whose objects come from ``theirs``."""
    if how == "gitdir-file":  # a `.git` file: git reads the repository it names
        evil = ours / "evil"
        evil.mkdir(parents=True)
        (evil / ".git").write_text(f"gitdir: {theirs}/.git\n")
        return evil
    # objects/info/alternates: git borrows every object of the folder it lists
    evil = ours / "evil.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(evil)], check=True)
    (evil / "objects" / "info" / "alternates").write_text(f"{theirs}/.git/objects\n")
    head = subprocess.run(
        ["git", "-C", str(theirs), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    (evil / "refs" / "heads" / "main").write_text(head + "\n")
    return evil


@pytest.mark.process
@pytest.mark.parametrize("how", ["gitdir-file", "alternates"])
@pytest.mark.parametrize("direction", ["alpha reads beta", "beta reads alpha"])
def test_a_repository_in_a_teams_own_folder_cannot_point_git_at_another_teams(
    api, team, settings, tmp_path, how, direction
):
    from tests.factories import add_member, make_user

    beta = make_team("Beta")
    folders = {team.slug: tmp_path / "alpha", beta.slug: tmp_path / "beta"}
    settings.ROCPATH_GIT_LOCAL_ALLOW = {slug: [str(path)] for slug, path in folders.items()}
    reader, victim = (team, beta) if direction == "alpha reads beta" else (beta, team)
    git_repo(folders[victim.slug] / "solver", {"secret.cu": SECRET})
    evil = redirecting_repository(how, folders[reader.slug], folders[victim.slug] / "solver")
    project = make_project(reader, "thief")
    if reader == beta:
        user = make_user("beta-admin")
        add_member(beta, user)
        api.force_authenticate(user)

    for url in (f"file://{evil}", str(evil)):
        response = add(api, project, url)
        assert response.status_code == 400, response.content
        assert "points git outside" in response.json()["git_url"][0]
    snapshot = clone_on_worker(project, f"file://{evil}")
    assert snapshot.status == "failed" and "points git outside" in snapshot.error
    leaked = [p for p in Path(settings.ARTIFACT_ROOT).rglob("*") if p.is_file()]
    assert not [p for p in leaked if p.read_bytes() == SECRET]
