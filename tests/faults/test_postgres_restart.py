"""PostgreSQL restarted under load, on a private cluster: nothing lost, nothing run twice.

The cluster is initdb'd under /tmp for this module (tests/faults/servers.py) and
restarted with `pg_ctl restart -m fast` (clients told, clean) and `-m immediate` (a
crash: recovery replays the WAL). A real worker and a real gunicorn use it through
DATABASE_URL; the test reads the database directly, a new connection per look.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from tests.faults.servers import PostgresCluster, RedisServer, free_port, port_answers
from tests.waits import JOB_S, START_S
from tests.workers import ROOT, Worker, children_of, group_alive, wait_until

pytestmark = [pytest.mark.faults, pytest.mark.integration, pytest.mark.slow]

GUNICORN = str(Path(sys.executable).with_name("gunicorn"))
WEB_WORKERS, WEB_THREADS = 2, 2
TERMINAL = ("succeeded", "failed", "errored", "canceled")


@dataclass
class Stack:
    """The private cluster, its database, a private Redis, gunicorn and the env they share."""

    cluster: PostgresCluster
    redis: RedisServer
    env: dict[str, str]
    port: int
    token: str
    folder: Path

    def request(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        status, _, answer = self.exchange(method, path, body)
        return status, answer

    def exchange(
        self, method: str, path: str, body: dict | None = None, *, signed_in: bool = True
    ) -> tuple[int, http.client.HTTPMessage, dict]:
        """The status, the headers and the JSON body ({} when the body is not JSON)."""
        headers = {"Content-Type": "application/json"}
        if signed_in:
            headers["Authorization"] = f"Token {self.token}"
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=START_S)
        try:
            conn.request(method, path, json.dumps(body) if body is not None else None, headers)
            response = conn.getresponse()
            raw = response.read()
        finally:
            conn.close()
        return response.status, response.headers, (json.loads(raw) if raw.startswith(b"{") else {})

    def submit(self, seconds: float) -> int:
        status, body = self.request(
            "POST", "/api/v1/jobs/", {"kind": "noop", "params": {"seconds": seconds, "steps": 8}}
        )
        assert status == 201, (status, body)
        return body["id"]

    def rows(self, sql: str, params: tuple = ()) -> list[tuple]:
        """The query's rows, or [] while the database does not answer (it is restarting)."""
        try:
            with psycopg.connect(self.env["DATABASE_URL"], connect_timeout=2) as conn:
                return conn.execute(sql, params).fetchall()
        except psycopg.OperationalError:
            return []

    def statuses(self, ids: list[int]) -> dict[int, str]:
        return dict(self.rows("SELECT id, status FROM jobs_job WHERE id = ANY(%s)", (ids,)))

    def worker(self, name: str, concurrency: int = 2) -> Worker:
        handle = Worker(
            env=dict(self.env, ROCPATH_QUEUE=self.env["ROCPATH_QUEUE"]),
            name=f"{name}@%h",
            queue=self.env["ROCPATH_QUEUE"],
            log=self.folder / f"{name}.log",
            concurrency=concurrency,
        )
        handle.log.touch()
        handle.start()
        return handle


def _manage(env: dict[str, str], *args: str) -> str:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=START_S * 3,
    ).stdout


@pytest.fixture(scope="module")
def stack(tmp_path_factory) -> Iterator[Stack]:
    folder = tmp_path_factory.mktemp("pgfault")
    cluster = PostgresCluster()
    redis = RedisServer(port=free_port(), folder=folder)
    web = None
    try:
        cluster.create()
        cluster.createdb("rocpath")
        redis.start()
        (folder / "artifacts").mkdir()
        env = {
            **__import__("os").environ,
            "DJANGO_SETTINGS_MODULE": "config.settings.test",
            "DATABASE_URL": cluster.url("rocpath"),
            "CELERY_BROKER_URL": redis.url,
            "ROCPATH_QUEUE": f"pgfault-{uuid.uuid4().hex[:8]}",
            "ROCPATH_ARTIFACT_ROOT": str(folder / "artifacts"),
            "ROCPATH_VAR_DIR": str(folder / "var"),
            "ROCPATH_EXECUTOR": "local",
            "ROCPATH_HEARTBEAT_S": "1",
            "ROCPATH_WORKER_BEAT_S": "1",
            "PYTHONUNBUFFERED": "1",
        }
        _manage(env, "migrate", "-v0")
        out = _manage(
            env,
            "shell",
            "-c",
            "from django.contrib.auth.models import User;"
            "from teams.models import Team, Membership;"
            "from rest_framework.authtoken.models import Token;"
            "u=User.objects.create_user('fault');"
            "t=Team.objects.create(name='fault', slug='fault');"
            "Membership.objects.create(team=t, user=u, role='member');"
            "print('TOKEN', Token.objects.create(user=u).key)",
        )
        token = next(line.split()[1] for line in out.splitlines() if line.startswith("TOKEN"))
        port = free_port()
        web = subprocess.Popen(
            [
                GUNICORN, "config.wsgi", "--bind", f"127.0.0.1:{port}",
                "--workers", str(WEB_WORKERS), "--threads", str(WEB_THREADS),
                "--error-logfile", str(folder / "web.log"),
            ],
            cwd=ROOT, env=env, start_new_session=True,
        )  # fmt: skip
        assert wait_until(lambda: port_answers(port), START_S), (folder / "web.log").read_text()
        yield Stack(cluster, redis, env, port, token, folder)
    finally:
        if web is not None:
            web.terminate()
            web.wait(timeout=START_S)
        redis.stop()
        cluster.destroy()


@pytest.fixture
def pg_worker(stack: Stack) -> Iterator[Worker]:
    handle = stack.worker(f"pgfault-{uuid.uuid4().hex[:6]}")
    yield handle
    handle.stop()


def _runner_starts(stack: Stack, ids: list[int]) -> dict[int, list[int]]:
    """Each job's runner process groups, one per runner the worker started."""
    starts: dict[int, list[int]] = {i: [] for i in ids}
    for job_id, message in stack.rows(
        "SELECT job_id, message FROM jobs_jobevent "
        "WHERE job_id = ANY(%s) AND message LIKE 'runner started%%' ORDER BY id",
        (ids,),
    ):
        starts[job_id].append(int(message.split("process group ")[1].split()[0]))
    return starts


@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_a_postgres_restart_under_load_loses_no_job_runs_none_twice_and_serves_no_500(
    stack: Stack, pg_worker: Worker, mode: str
):
    ids = [stack.submit(seconds=3) for _ in range(6)]  # two slots: two run, four queued
    assert wait_until(
        lambda: list(stack.statuses(ids).values()).count("running") == 2, START_S, 0.1
    ), stack.statuses(ids)

    stack.cluster.restart(mode)

    # Once the database is back, no request fails: each web thread's kept connection is
    # checked before it is reused (CONN_HEALTH_CHECKS).
    answers = [
        stack.request("GET", "/api/v1/jobs/")[0] for _ in range(4 * WEB_WORKERS * WEB_THREADS)
    ]
    ids += [stack.submit(seconds=0) for _ in range(2)]
    assert all(code < 500 for code in answers), answers

    def all_ended() -> bool:
        return all(s in TERMINAL for s in stack.statuses(ids).values()) and len(
            stack.statuses(ids)
        ) == len(ids)

    assert wait_until(all_ended, JOB_S, 0.2), (
        stack.statuses(ids),
        pg_worker.log.read_text()[-3000:],
    )
    rows = {
        job_id: (status, attempt, error)
        for job_id, status, attempt, error in stack.rows(
            "SELECT id, status, attempt, error FROM jobs_job WHERE id = ANY(%s)", (ids,)
        )
    }
    assert {s for s, _, _ in rows.values()} == {"succeeded"}, rows
    starts = _runner_starts(stack, ids)
    for job_id, (_, attempt, _) in rows.items():
        # At most one runner per attempt (an attempt the restart cut short before its
        # runner started has none), and a job the restart cut short ran again once.
        assert 1 <= len(starts[job_id]) <= attempt <= 2, (job_id, attempt, starts[job_id])
    assert pg_worker.proc.poll() is None, "the worker did not outlive the restart"
    # ... and its fleet beat (jobs.fleet) goes on past it: the worker is still shown live
    (after,) = stack.rows("SELECT now()")[0]
    name = pg_worker.name.replace("%h", "") + "%"
    assert wait_until(
        lambda: bool(
            stack.rows(
                "SELECT 1 FROM jobs_worker WHERE name LIKE %s AND last_seen_at > %s",
                (name, after),
            )
        ),
        START_S,
        0.2,
    ), pg_worker.log.read_text()[-3000:]
    orphans = [g for groups in starts.values() for g in groups if group_alive(g)]
    assert not orphans, f"runner process groups left behind: {orphans}"


def test_a_pool_child_killed_while_postgres_is_down_has_its_job_ended_once_it_is_back(
    stack: Stack,
):
    """The worker's main process ends a killed child's job at once (test_worker.py), but
    not in an outage: it gave up, the message Celery put back found the job running under
    its own task id and queued it again as a database loss, and a soak saw such a job end
    245 s after the kill. Now the main process tries until the database answers."""
    worker = stack.worker(f"pgfault-{uuid.uuid4().hex[:6]}", concurrency=1)
    try:
        job_id = stack.submit(seconds=60)
        assert wait_until(lambda: _runner_starts(stack, [job_id])[job_id], START_S, 0.1)
        (child,) = children_of(worker.proc.pid)  # one slot: the pool child running the job
        stack.cluster.stop("fast")
        os.kill(child, signal.SIGKILL)
        worker.wait_for_log("exited with 'signal 9 (SIGKILL)'")
        time.sleep(2)  # the outage goes on past the main process's first two tries
        stack.cluster.start()
        back = time.monotonic()

        def ended() -> tuple | None:
            rows = stack.rows(
                "SELECT status, attempt, error FROM jobs_job WHERE id = %s AND status <> %s",
                (job_id, "running"),
            )
            return rows[0] if rows else None

        assert wait_until(ended, 5, 0.1), worker.log.read_text()[-3000:]
        assert time.monotonic() - back <= 5
        status, attempt, error = ended()
        assert (status, attempt) == ("errored", 1), (status, attempt, error)
        assert "was killed (signal 9 (SIGKILL)) mid-run" in error, error
    finally:
        worker.stop()


# Token authentication is the first thing each of these reads from the database, so
# the outage meets them there; the list and the submission reach it in their own code.
DOWN_REQUESTS = [
    ("GET", "/api/v1/jobs/"),
    ("POST", "/api/v1/jobs/"),
    ("GET", "/api/v1/kinds/"),
    ("GET", "/api/v1/workers/"),
    ("GET", "/api/v1/"),
]


def test_while_postgres_is_down_every_api_request_is_a_json_503_with_retry_after(stack: Stack):
    assert stack.request("GET", "/api/v1/jobs/")[0] == 200
    stack.cluster.stop("fast")
    try:
        answers = {
            (method, path): stack.exchange(
                method, path, {"kind": "noop", "params": {}} if method == "POST" else None
            )
            for method, path in DOWN_REQUESTS
        }
    finally:
        stack.cluster.start()

    for request, (status, headers, body) in answers.items():
        assert status == 503, (request, status, headers, body)
        assert headers["Content-Type"] == "application/json", (request, headers)
        assert int(headers["Retry-After"]) > 0, (request, headers)
        assert "database" in body["detail"], (request, body)
    # ... and once it is back, the same requests are answered as usual.
    assert stack.request("GET", "/api/v1/jobs/")[0] == 200
