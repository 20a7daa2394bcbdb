"""GET /api/v1/workers/: the whole fleet for any signed-in user, the jobs on it only where
the reader's teams may read them."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from jobs.choices import JobStatus
from tests.factories import add_member, make_job, make_team, make_user, make_worker

URL = "/api/v1/workers/"

NVIDIA = [
    {"index": i, "vendor": "nvidia", "model": "NVIDIA H200", "arch": "sm_90", "memory_bytes": 1}
    for i in range(2)
]


def _names(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [w["name"] for w in response.json()["results"]]


def test_an_anonymous_caller_is_refused_and_sees_no_worker(db):
    make_worker("celery@secret-host")
    response = APIClient().get(URL)
    assert response.status_code == 401  # token auth's challenge comes first
    assert b"secret-host" not in response.content


def test_the_list_shows_live_workers_before_gone_and_stopped_ones(api, settings):
    settings.ROCPATH_WORKER_GONE_S = 60
    make_worker("celery@a-gone", seen_s_ago=600)
    make_worker("celery@b-stopped", stopped_at=timezone.now())
    make_worker("celery@c-live", seen_s_ago=5)
    body = api.get(URL).json()
    assert [(w["name"], w["state"]) for w in body["results"]] == [
        ("celery@c-live", "live"),
        ("celery@a-gone", "gone"),
        ("celery@b-stopped", "stopped"),
    ]
    assert body["count"] == 3


def test_a_worker_shows_its_whole_inventory_and_its_gpus_grouped(api):
    gpus = [
        {"index": i, "vendor": "amd", "model": "MI300X", "arch": "gfx942", "memory_bytes": 192}
        for i in range(8)
    ]
    worker = make_worker("celery@gpu-node-7", gpus=gpus, queues=["rocpath", "gpu-gfx942"])
    row = api.get(URL).json()["results"][0]
    assert row["gpus"] == [
        {"count": 8, "vendor": "amd", "model": "MI300X", "arch": "gfx942", "memory_bytes": 192}
    ]
    assert row["inventory"] == worker.inventory  # nothing hidden
    assert row["queues"] == ["rocpath", "gpu-gfx942"]
    assert row["host"] == "gpu-node-7" and row["executor"] == "local"
    assert row["links"]["self"] == f"/api/v1/workers/{worker.pk}/"


def test_the_state_filter_keeps_only_that_state(api):
    make_worker("celery@live", seen_s_ago=1)
    make_worker("celery@gone", seen_s_ago=3600)
    assert _names(api.get(URL, {"state": "live"})) == ["celery@live"]
    assert _names(api.get(URL, {"state": "gone"})) == ["celery@gone"]
    assert _names(api.get(URL, {"state": "stopped"})) == []


def test_an_unknown_state_is_a_400_naming_the_field(api):
    response = api.get(URL, {"state": "asleep"})
    assert response.status_code == 400 and "state" in response.json()


def test_the_vendor_filter_keeps_workers_with_such_a_gpu(api):
    make_worker("celery@amd")
    make_worker("celery@nvidia", gpus=NVIDIA)
    make_worker("celery@cpu", gpus=[])
    assert _names(api.get(URL, {"vendor": "amd"})) == ["celery@amd"]
    assert _names(api.get(URL, {"vendor": "NVIDIA"})) == ["celery@nvidia"]


def test_the_queue_filter_keeps_workers_consuming_it(api):
    make_worker("celery@one", queues=["rocpath", "gpu-amd"])
    make_worker("celery@two", queues=["rocpath"])
    assert _names(api.get(URL, {"queue": "gpu-amd"})) == ["celery@one"]
    assert _names(api.get(URL, {"queue": "rocpath"})) == ["celery@one", "celery@two"]


def test_a_worker_shows_only_the_running_jobs_of_the_readers_teams(api, team):
    worker = make_worker("celery@shared", jobs_running=2)
    ours = make_job(team, status=JobStatus.RUNNING, kind="probe", worker=worker.name)
    theirs = make_job(make_team(), status=JobStatus.RUNNING, kind="secret", worker=worker.name)
    make_job(team, status=JobStatus.SUCCEEDED, worker=worker.name)  # ended: not "now"
    for row in (api.get(URL).json()["results"][0], api.get(f"{URL}{worker.pk}/").json()):
        link = f"/api/v1/jobs/{ours.pk}/"
        assert row["jobs"] == [{"id": ours.pk, "kind": "probe", "status": "running", "link": link}]
        assert row["jobs_running"] == 2  # the announced count: every team's
        assert str(theirs.pk) not in str(row["jobs"]) and "secret" not in str(row)


def test_a_user_of_no_team_sees_the_fleet_but_no_job(db):
    worker = make_worker("celery@shared")
    make_job(make_team(), status=JobStatus.RUNNING, worker=worker.name)
    client = APIClient()
    client.force_authenticate(make_user("nobody"))
    rows = client.get(URL).json()["results"]
    assert [r["name"] for r in rows] == ["celery@shared"] and rows[0]["jobs"] == []


def test_a_worker_is_found_by_id_or_by_its_node_name(api):
    worker = make_worker("celery@gpu-node-9")
    assert api.get(f"{URL}{worker.pk}/").json()["name"] == "celery@gpu-node-9"
    assert api.get(f"{URL}celery@gpu-node-9/").json()["id"] == worker.pk
    assert api.get(f"{URL}celery@nowhere/").status_code == 404


def test_listing_the_fleet_costs_the_same_queries_for_one_worker_or_twenty(api, team, user):
    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert api.get(URL).status_code == 200
        return len(queries)

    first = make_worker()
    make_job(team, status=JobStatus.RUNNING, worker=first.name)
    one = count()
    for _ in range(19):
        worker = make_worker()
        make_job(team, status=JobStatus.RUNNING, worker=worker.name)
    other = make_team()
    add_member(other, user)
    make_job(other, status=JobStatus.RUNNING, worker=first.name)
    assert count() == one
