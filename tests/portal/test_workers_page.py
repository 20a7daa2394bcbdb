"""The Workers pages: the fleet, live first and gone greyed after; each worker's inventory;
the jobs on it linked only where the reader's teams may read them."""

from __future__ import annotations

import re

from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from jobs.choices import JobStatus
from tests.factories import make_job, make_team, make_worker


def _rows(html: str) -> list[tuple[str, str]]:
    """(worker id, state) of each row, in page order."""
    return re.findall(r'<tr data-worker="(\d+)" data-state="(\w+)"', html)


def test_the_workers_page_needs_a_signed_in_user(db):
    response = Client().get("/workers/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_the_nav_links_to_the_workers_page(member_client):
    assert 'href="/workers/"' in member_client.get("/").content.decode()


def test_the_page_lists_live_workers_first_and_greys_gone_and_stopped_ones(member_client, settings):
    settings.ROCPATH_WORKER_GONE_S = 60
    gone = make_worker("celery@a-gone", seen_s_ago=300)
    stopped = make_worker("celery@b-stopped", stopped_at=timezone.now())
    live = make_worker("celery@c-live", seen_s_ago=3)
    html = member_client.get("/workers/").content.decode()
    assert _rows(html) == [
        (str(live.pk), "live"),
        (str(gone.pk), "gone"),
        (str(stopped.pk), "stopped"),
    ]
    assert 'class="worker worker-gone"' in html and 'class="worker worker-stopped"' in html
    assert "last seen 300 s ago" in html or "last seen 301 s ago" in html
    assert "1 live of 3" in html


def test_a_row_summarizes_gpus_software_queues_and_images(member_client):
    gpus = [
        {"index": i, "vendor": "amd", "model": "AMD Instinct MI300X", "arch": "gfx942",
         "memory_bytes": 206158430208}
        for i in range(8)
    ]  # fmt: skip
    make_worker(
        "celery@gpu-node-7",
        inventory={
            "gpus": gpus,
            "software": {"rocm_version": "6.2.1"},
            "images": ["rocm/pytorch:rocm6.2", "sha256:4f1c"],
        },
        queues=["rocpath", "gpu-gfx942"],
        executor="docker",
    )
    html = member_client.get("/workers/").content.decode()
    assert "8 \u00d7 AMD Instinct MI300X" in html and "<code>gfx942</code>" in html
    assert "192.0\xa0GB" in html  # filesizeformat of the memory
    assert "ROCm 6.2.1" in html and "<code>gpu-gfx942</code>" in html
    assert '<td class="num">2</td>' in html  # images count


def test_the_page_links_only_the_readers_jobs_running_on_a_worker(member_client, team):
    worker = make_worker("celery@shared", jobs_running=2)
    ours = make_job(team, status=JobStatus.RUNNING, worker=worker.name)
    theirs = make_job(make_team(), status=JobStatus.RUNNING, worker=worker.name)
    for url in ("/workers/", f"/workers/{worker.pk}/"):
        html = member_client.get(url).content.decode()
        assert f'href="/jobs/{ours.pk}/"' in html
        assert f'href="/jobs/{theirs.pk}/"' not in html and f'data-job="{theirs.pk}"' not in html


def test_the_list_takes_the_same_queries_for_two_workers_or_thirty(member_client, team):
    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert member_client.get("/workers/").status_code == 200
        return len(queries)

    for _ in range(2):
        make_job(team, status=JobStatus.RUNNING, worker=make_worker().name)
    two = count()
    for _ in range(28):
        make_job(team, status=JobStatus.RUNNING, worker=make_worker(seen_s_ago=999).name)
    assert count() == two
    with CaptureQueriesContext(connection) as queries:
        member_client.get("/workers/")
    fleet = [q["sql"] for q in queries if '"jobs_worker"' in q["sql"] or '"jobs_job"' in q["sql"]]
    assert len(fleet) == 2  # the workers, and the reader's jobs running on them


def test_a_workers_page_shows_its_full_inventory(member_client):
    worker = make_worker(
        "celery@slurm-login",
        executor="slurm",
        inventory={
            "gpus": [{"index": 0, "vendor": "nvidia", "model": "NVIDIA H200", "arch": "sm_90",
                      "memory_bytes": 150754820096, "driver": "580.159.04"}],
            "software": {"cuda_version": "13.0", "rocm_version": None},
            "images": ["nvcr.io/pytorch:24.10"],
            "partition": "gpu",
            "max_time_s": 86400,
        },
    )  # fmt: skip
    html = member_client.get(f"/workers/{worker.pk}/").content.decode()
    assert "NVIDIA H200" in html and "580.159.04" in html and "sm_90" in html
    assert "13.0" in html and "nvcr.io/pytorch:24.10" in html
    assert "partition" in html and "86400" in html
    assert member_client.get("/workers/99999/").status_code == 404


def test_the_worker_admin_lists_and_filters_workers_read_only(db):
    worker = make_worker("celery@in-admin", seen_s_ago=3600)
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", password="pw"))
    listing = client.get("/admin/jobs/worker/")
    assert listing.status_code == 200 and "celery@in-admin" in listing.content.decode()
    assert "celery@in-admin" in client.get("/admin/jobs/worker/?state=gone").content.decode()
    assert "celery@in-admin" not in client.get("/admin/jobs/worker/?state=live").content.decode()
    page = client.get(f"/admin/jobs/worker/{worker.pk}/change/")
    assert page.status_code == 200 and 'name="_save"' not in page.content.decode()
    assert client.get("/admin/jobs/worker/add/").status_code == 403


def test_the_table_refreshes_itself_on_the_workers_beat(member_client, settings):
    settings.ROCPATH_WORKER_BEAT_S = 15
    html = member_client.get("/workers/").content.decode()
    assert 'hx-trigger="every 15s" hx-select="#fleet"' in html
