"""A newcomer's first hour, in a real browser on `make run`'s embedded defaults.

scripts/run.sh as a newcomer starts it (a SQLite file, the filesystem broker, local
jobs), then every page family a first run meets: sign in with the login it printed,
create a project, upload CUDA code, scan it with HIPIFY, read the roadmap, benchmark
twice, compare the two runs, follow a case's history, download the PDF. No page may
answer 5xx and no page may break its Content-Security-Policy. ROCPATH_SCREENSHOTS=DIR
keeps a screenshot of each step (docs/results/first-run/ holds the last ones kept).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from stack.tools import which
from tests.archives import tar_bytes, tar_entry
from tests.browser.steps import sign_in
from tests.browser.test_csp import WATCH
from tests.makerun import make_run
from tests.waits import JOB_S, LONG_JOB_S

pytestmark = [
    pytest.mark.browser,
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.skipif(
        which("hipify-perl") is None and not os.environ.get("CI"),
        reason="hipify-perl is not installed (scripts/install-rocm-tools.sh installs it)",
    ),
]

KERNEL = b"""\
#include <cuda_runtime.h>

__global__ void scale(float a, float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}

void run(float* x, int n) {
  float* d;
  cudaMalloc(&d, n * sizeof(float));
  scale<<<(n + 255) / 256, 256>>>(2.0f, d, n);
  cudaDeviceSynchronize();
  cudaFree(d);
}
"""
# Two small GEMM sweeps on the CPU: seconds each, enough cases to compare.
BENCH = {"families": ["gemm"], "precisions": ["fp32"], "sizes": [128, 256]}


class Journey:
    """The browser's page, with what every step is checked for."""

    def __init__(self, page, shots: Path) -> None:
        self.page = page
        self.shots = shots
        self.errors: list[str] = []
        page.add_init_script(WATCH)
        page.on(
            "response",
            lambda r: self.errors.append(f"{r.status} {r.url}") if r.status >= 500 else None,
        )

    def shot(self, name: str) -> None:
        self.page.screenshot(path=str(self.shots / f"{name}.png"), full_page=True)
        violations = self.page.evaluate("window.__csp || []")
        assert violations == [], (name, violations)
        assert self.errors == [], (name, self.errors)

    def wait_job(self, status: str = "succeeded", timeout: float = JOB_S) -> None:
        self.page.wait_for_selector(f'#job-status [data-status="{status}"]', timeout=timeout * 1000)


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    kept = os.environ.get("ROCPATH_SCREENSHOTS")
    folder = Path(kept) if kept else tmp_path / "shots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_a_newcomer_goes_from_make_run_to_a_pdf_on_the_embedded_defaults(chromium, tmp_path, shots):
    archive = tmp_path / "solver.tar.gz"
    archive.write_bytes(tar_bytes([(tar_entry("solver/scale.cu"), KERNEL)]))
    with make_run(tmp_path) as run:
        assert "executor: local" in run.output()
        user, password = run.login()
        context = chromium.new_context(base_url=run.url, viewport={"width": 1280, "height": 900})
        page = context.new_page()
        journey = Journey(page, shots)

        try:
            sign_in(page, user, password)
            journey.shot("01-dashboard")

            page.click("nav >> text=Projects")
            page.fill("#id_name", "first-port")
            page.fill("#id_codebase_description", "A CUDA solver")
            page.click("form:has(#id_name) button[type=submit]")
            page.wait_for_url("**/projects/*/")
            project_url = page.url
            journey.shot("02-project")

            page.set_input_files("#archive", str(archive))
            page.click("form:has(#archive) button[type=submit]")
            page.wait_for_selector("tr[data-source] >> text=Ready", timeout=JOB_S * 1000)
            page.click('[data-step="hipify-scan"]')
            journey.wait_job(timeout=LONG_JOB_S)
            journey.shot("03-scan-job")

            page.goto(project_url)
            page.click("text=Porting report")
            assert "files (1 with device code)" in page.inner_text("section.tiles")
            journey.shot("04-porting-report")

            page.goto(project_url)
            page.click("a[href$='/roadmap/']")
            page.wait_for_url("**/roadmap/")
            assert "Assessment" in page.inner_text("main")
            journey.shot("05-roadmap")

            with page.expect_download() as caught:
                page.click('[data-report="pdf"]')
            pdf = Path(caught.value.path()).read_bytes()
            assert pdf.startswith(b"%PDF") and len(pdf) > 10_000

            jobs = []
            for _ in range(2):
                page.click("nav >> text=Submit")
                page.select_option("#id_kind", "blas-bench")
                page.fill("#id_params", json.dumps(BENCH))
                page.click("form:has(#id_params) button[type=submit]")
                page.wait_for_url("**/jobs/*/")
                jobs.append(page.url.rstrip("/").rsplit("/", 1)[1])
                journey.wait_job(timeout=LONG_JOB_S)
            journey.shot("06-bench-job")

            page.click("nav >> text=Jobs")
            for job in jobs:
                page.check(f'tr[data-job="{job}"] input[type=checkbox]')
            page.click("#compare-selected")
            page.wait_for_url("**/compare/?*")
            assert page.locator("#comparison tr[data-case]").count() >= 2
            journey.shot("07-compare")

            page.locator("#comparison tr[data-case] a", has_text="history").first.click()
            page.wait_for_url("**/history/?*")
            assert page.locator(".chart svg").first.is_visible()
            journey.shot("08-history")

            page.click("nav >> text=Compare")  # the nav link, nothing selected
            page.wait_for_url("**/compare/")
            journey.shot("09-compare-empty")
        except BaseException:
            page.screenshot(path=str(shots / "failed.png"), full_page=True)
            raise
        context.close()
