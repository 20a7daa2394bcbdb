"""The newcomer's journey through the REST API, on PostgreSQL.

tests/browser/test_first_run.py walks the pages on `make run`'s embedded defaults; this
is the same journey as API calls (a token, a project, an upload, a HIPIFY scan, the
roadmap and its report, two benchmarks, their comparison and a case's history, the PDF)
against scripts/run.sh pointed at a PostgreSQL database of its own (made and dropped
here). Every call must answer below 500.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from collections.abc import Iterator

import psycopg
import pytest
import requests

from stack.tools import which
from tests.archives import tar_bytes, tar_entry
from tests.browser.test_first_run import BENCH, KERNEL
from tests.makerun import Run, make_run
from tests.manage_helpers import manage
from tests.waits import JOB_S, LONG_JOB_S, wait_until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.skipif(
        which("hipify-perl") is None and not os.environ.get("CI"),
        reason="hipify-perl is not installed (scripts/install-rocm-tools.sh installs it)",
    ),
]
SERVER = "postgres://postgres@127.0.0.1:5432"


@pytest.fixture
def database() -> Iterator[str]:
    name = f"rocpath_first_run_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(f"{SERVER}/postgres", autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{SERVER}/{name}"
    finally:
        with psycopg.connect(f"{SERVER}/postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class Api:
    def __init__(self, run: Run, token: str) -> None:
        self.base = f"{run.url}/api/v1"
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Token {token}"

    def call(self, method: str, path: str, expect: int = 200, **kwargs) -> requests.Response:
        response = self.session.request(method, f"{self.base}{path}", timeout=60, **kwargs)
        assert response.status_code == expect, (method, path, response.text[:2000])
        return response

    def wait_job(self, job_id: int, timeout: float = LONG_JOB_S) -> dict:
        found: dict = {}

        def ended() -> bool:
            found.update(self.call("GET", f"/jobs/{job_id}/").json())
            return found["status"] in {"succeeded", "failed", "errored", "canceled"}

        assert wait_until(ended, timeout, 0.5), found
        assert found["status"] == "succeeded", found
        return found


def test_the_first_run_journey_answers_through_the_api_on_postgresql(database, tmp_path):
    with make_run(tmp_path, DATABASE_URL=database) as run:
        made = manage(run.env, "drf_create_token", "demo")
        assert made.returncode == 0, made.stderr
        api = Api(run, made.stdout.split()[2])

        team = api.call("GET", "/teams/").json()["results"][0]["slug"]
        project = api.call(
            "POST", "/projects/", 201, json={"team": team, "name": "first-port"}
        ).json()["id"]
        archive = tar_bytes([(tar_entry("solver/scale.cu"), KERNEL)])
        source = api.call(
            "POST",
            f"/projects/{project}/sources/",
            201,
            files={"archive": ("solver.tar.gz", archive, "application/gzip")},
        ).json()["id"]

        def ready() -> bool:
            listed = api.call("GET", f"/projects/{project}/sources/").json()["results"]
            return any(s["id"] == source and s["status"] == "ready" for s in listed)

        assert wait_until(ready, JOB_S, 0.5)

        scan = api.call(
            "POST", "/jobs/", 201, json={"kind": "hipify-scan", "team": team, "project": project}
        ).json()["id"]
        api.wait_job(scan)
        report = api.call("GET", f"/projects/{project}/porting-report/").json()
        assert [f["path"] for f in report["files"]] == ["solver/scale.cu"], report
        roadmap = api.call("GET", f"/projects/{project}/roadmap/").json()
        assert [phase["number"] for phase in roadmap["phases"]] == [1, 2, 3, 4]
        markdown = api.call("GET", f"/projects/{project}/roadmap/report.md").text
        assert "first-port" in markdown

        benches = []
        for _ in range(2):
            job = api.call(
                "POST", "/jobs/", 201, json={"kind": "blas-bench", "team": team, "params": BENCH}
            ).json()["id"]
            benches.append(api.wait_job(job)["id"])
        compared = api.call(
            "GET", "/compare/", params=[("jobs", benches[0]), ("jobs", benches[1])]
        ).json()
        assert compared["rows"], compared
        row = next(r for r in compared["rows"] if r["metric"] == "throughput")
        history = api.call(
            "GET",
            "/history/",
            params={
                "benchmark": row["benchmark"],
                "metric": row["metric"],
                "case": json.dumps(row["case"]),
                "fingerprint": compared["columns"][0]["environment"]["fingerprint"],
            },
        ).json()
        assert len(history["points"]) == 2, history

        # The PDF is a page, not an API call: the session signed in through the login form.
        with contextlib.closing(requests.Session()) as browser:
            user, password = run.login()
            login = browser.get(f"{run.url}/accounts/login/", timeout=60)
            signed = browser.post(
                f"{run.url}/accounts/login/",
                data={
                    "username": user,
                    "password": password,
                    "csrfmiddlewaretoken": login.cookies["csrftoken"],
                },
                headers={"Referer": f"{run.url}/accounts/login/"},
                timeout=60,
            )
            assert signed.status_code == 200 and "Sign out" in signed.text
            started = time.monotonic()
            pdf = browser.get(f"{run.url}/projects/{project}/report.pdf", timeout=120)
            assert pdf.status_code == 200, (pdf.status_code, time.monotonic() - started)
            assert pdf.content.startswith(b"%PDF")
