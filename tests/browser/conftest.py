"""Browser tests' fixtures: Debian's headless Chromium driven by Playwright, a live server
and a real worker."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="module")
def chromium() -> Iterator[object]:
    """Debian's headless Chromium, one per module (its start is most of a browser test's set-up)."""
    if not os.path.exists(CHROMIUM):
        pytest.fail("Debian's chromium is not installed (.ci/run installs it)")
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; the ORM calls of the
    # test itself are still plain synchronous calls.
    with pytest.MonkeyPatch.context() as patch, sync_playwright() as playwright:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        yield browser
        browser.close()


@pytest.fixture
def page(chromium, live_server, worker, settings, tmp_path):  # the worker runs the jobs
    settings.ALLOWED_HOSTS = ["localhost", "127.0.0.1"]
    context = chromium.new_context(base_url=live_server.url)
    page = context.new_page()
    yield page
    page.screenshot(path=str(tmp_path / "last.png"))
    context.close()
