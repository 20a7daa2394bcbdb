"""Database faults on the real PostgreSQL: its backends killed under a worker and the web.

pg_terminate_backend is what a PostgreSQL restart does to every open connection, done to
this test database's connections only (the server itself stays up for the other suites).
"""

from __future__ import annotations

import psycopg
import pytest
from django.db import close_old_connections, connection

from jobs import services
from jobs.choices import JobStatus
from jobs.models import Job
from tests.waits import JOB_S
from tests.workers import TERMINAL, wait_for_status, wait_until

pytestmark = [pytest.mark.faults, pytest.mark.integration, pytest.mark.slow]


def _terminate_other_backends() -> int:
    """Kill every connection to this database but the test's own; how many there were."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return cursor.fetchone()[0]


def _noop(user, team, seconds: float = 0) -> int:
    return services.submit_job(
        user=user, kind="noop", params={"seconds": seconds, "steps": 20}, team=team
    ).pk


def test_a_worker_whose_connections_were_killed_runs_the_next_job(fault_worker, user, team):
    first = wait_for_status(_noop(user, team), TERMINAL)
    assert first.status == JobStatus.SUCCEEDED, first.error
    assert _terminate_other_backends() >= 1  # the pool process kept its connection

    job = wait_for_status(_noop(user, team), TERMINAL)
    assert job.status == JobStatus.SUCCEEDED, job.error


def test_a_job_whose_database_went_away_mid_run_runs_again_saying_why(fault_worker, user, team):
    job_id = _noop(user, team, seconds=4)
    wait_for_status(job_id, {JobStatus.RUNNING})
    assert wait_until(lambda: Job.objects.get(pk=job_id).progress > 0, JOB_S)
    _terminate_other_backends()

    job = wait_for_status(job_id, TERMINAL, timeout=JOB_S)
    assert job.status == JobStatus.SUCCEEDED and job.attempt == 2, job.error
    notes = list(job.events.filter(kind="status").values_list("message", flat=True))
    assert any("the database connection was lost while the job ran" in n for n in notes), notes


def test_the_first_request_after_the_database_dropped_its_connection_is_not_a_500(
    transactional_db, api
):
    assert api.get("/api/v1/jobs/").status_code == 200
    with connection.cursor() as cursor:  # the web's connection, killed from another one
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    db = connection.settings_dict
    with psycopg.connect(
        host=db["HOST"], port=db["PORT"], user=db["USER"], dbname=db["NAME"], autocommit=True
    ) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])

    # What Django's handler does as a request starts (the test client leaves it out).
    close_old_connections()
    assert api.get("/api/v1/jobs/").status_code == 200
