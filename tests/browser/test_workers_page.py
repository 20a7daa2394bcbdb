"""The Workers page in a real browser: a live worker and a gone one (greyed, after it),
a worker's inventory, and a queued job's waiting note, with no CSP violation.
``ROCPATH_SCREENSHOTS=DIR`` keeps a screenshot of the page (docs/screenshots/workers.png)."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from jobs.choices import JobStatus
from jobs.models import Worker
from jobs.routing import arch_queue
from teams.choices import Role
from tests.browser.steps import sign_in
from tests.browser.test_csp import WATCH
from tests.factories import add_member, make_job, make_team, make_user, make_worker
from tests.waits import PROMPT_S

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]

MI300X = {"vendor": "amd", "model": "AMD Instinct MI300X", "arch": "gfx942"}


def test_the_workers_page_shows_live_and_gone_workers_without_a_csp_violation(page, settings):
    settings.ROCPATH_WORKER_BEAT_S = 1  # the table refreshes on the beat
    team = make_team("Fleet")
    user = make_user("fiona", password="correct horse battery")
    add_member(team, user, Role.MEMBER)
    live = make_worker(
        "celery@mi300x-node-1",
        executor="docker",
        jobs_running=1,
        inventory={
            "gpus": [{"index": i, **MI300X, "memory_bytes": 206158430208} for i in range(8)],
            "software": {"rocm_version": "6.2.1"},
            "images": ["rocm/pytorch:rocm6.2", "rocpath/job-debian:latest"],
        },
    )
    gone = make_worker(
        "celery@h200-node-2",
        seen_s_ago=900,
        inventory={
            "gpus": [{"index": 0, "vendor": "nvidia", "model": "NVIDIA H200", "arch": "sm_90",
                      "memory_bytes": 150754820096}],
            "software": {"cuda_version": "13.0"},
        },
    )  # fmt: skip
    running = make_job(team, status=JobStatus.RUNNING, kind="blas-bench", worker=live.name)
    waiting = make_job(
        team,
        status=JobStatus.QUEUED,
        queue=arch_queue("nvidia", "sm_90"),
        route_note=f"waiting on {arch_queue('nvidia', 'sm_90')}: consumed by 1 capable "
        "worker(s): celery@h200-node-2; celery@h200-node-2 idle",
    )
    page.add_init_script(WATCH)
    sign_in(page, "fiona", "correct horse battery")

    page.click("nav >> text=Workers")
    page.wait_for_url("**/workers/")
    rows = page.locator("#workers tbody tr[data-worker]")
    order = [rows.nth(i).get_attribute("data-worker") for i in range(rows.count())]
    assert order.index(str(live.pk)) < order.index(str(gone.pk))  # live first
    live_row = page.locator(f'tr[data-worker="{live.pk}"]')
    gone_row = page.locator(f'tr[data-worker="{gone.pk}"]')
    assert live_row.locator(".worker-state").inner_text() == "live"
    assert gone_row.locator(".worker-state").inner_text() == "gone"
    # The table is swapped every second: expect() waits for the state instead of reading
    # a row that a swap may be replacing at that instant.
    expect(gone_row).to_have_css("opacity", "0.55")  # greyed (rocpath.css)
    expect(live_row).to_have_css("opacity", "1")
    assert "8 \u00d7 AMD Instinct MI300X" in live_row.inner_text()
    assert live_row.locator(f'a[data-job="{running.pk}"]').count() == 1
    if folder := os.environ.get("ROCPATH_SCREENSHOTS"):
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / "workers.png"), full_page=True)
    violations = list(page.evaluate("window.__csp || []"))

    # The gone worker announces itself again: the table says so without a reload.
    Worker.objects.filter(pk=gone.pk).update(last_seen_at=timezone.now())
    page.wait_for_selector(
        f'tr[data-worker="{gone.pk}"][data-state="live"]', timeout=PROMPT_S * 1000
    )
    violations += page.evaluate("window.__csp || []")

    live_row.locator("td >> nth=0 >> a").click()
    page.wait_for_selector("#worker-gpus")
    assert page.locator("#worker-gpus tbody tr").count() == 8
    assert "rocpath/job-debian:latest" in page.locator("#worker-images").inner_text()
    violations += page.evaluate("window.__csp || []")

    page.goto(f"/jobs/{waiting.pk}/")
    note = page.locator("#job-waiting")
    assert arch_queue("nvidia", "sm_90") in note.inner_text()
    assert "consumed by 1 capable worker(s): celery@h200-node-2" in note.inner_text()
    assert "1 live worker consumes it, 0 busy" in note.inner_text()  # the H200 is back
    # It goes again: the log poll, which refreshes the status, refreshes the note too.
    Worker.objects.filter(pk=gone.pk).update(last_seen_at=timezone.now() - timedelta(hours=1))
    page.locator("#job-waiting", has_text="no live worker consumes this queue now").wait_for(
        timeout=PROMPT_S * 1000
    )
    assert "ROCPATH_QUEUED_GRACE_S" in note.inner_text()
    violations += page.evaluate("window.__csp || []")
    assert violations == []
