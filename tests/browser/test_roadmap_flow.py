"""The roadmap, walked in a real browser: a new project's phase 1, its code scanned from
a task's button, the gate's criteria met from data or overridden with a reason, the
checklist answered, phase 2 opening, and the report downloaded as a PDF.

Two GPUs cannot be benchmarked on this machine, so the like-for-like comparison is
overridden with its reason, as a team waiting for hardware would do; the override is
then on the page and in the report. ``ROCPATH_SCREENSHOTS=DIR`` keeps screenshots of
the home, a gate and the report (docs/screenshots/ holds a set).
"""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from roadmap.models import GateOverride
from stack.tools import which
from teams.choices import Role
from tests.browser.steps import sign_in
from tests.factories import add_member, make_team, make_user

pytestmark = [
    pytest.mark.browser,
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.skipif(which("hipify-perl") is None, reason="hipify-perl is not installed"),
]

KERNEL = """\
#include <cuda_runtime.h>
__global__ void scale(float a, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] *= a;
}
void run(float* y, int n) { scale<<<(n + 255) / 256, 256>>>(2.0f, y, n); cudaDeviceSynchronize(); }
"""


def _archive(path: Path) -> None:
    with tarfile.open(path, "w:gz") as tar:
        data = KERNEL.encode()
        member = tarfile.TarInfo("app/scale.cu")
        member.size = len(data)
        tar.addfile(member, io.BytesIO(data))


def _shot(page, name: str) -> None:
    if folder := os.environ.get("ROCPATH_SCREENSHOTS"):
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)


def _override(page, phase: int, criterion: str, reason: str) -> None:
    section = page.locator(f'section[data-phase="{phase}"]')
    section.locator("summary", has_text="Override a criterion").click()
    section.locator('select[name="criterion"]').select_option(criterion)
    section.locator('textarea[name="reason"]').fill(reason)
    section.locator("button", has_text="Record override").click()


def test_a_team_walks_phase_one_and_opens_phase_two(page, tmp_path):
    team = make_team("Climate")
    user = make_user("ines", password="correct horse battery")
    add_member(team, user, Role.ADMIN)  # an admin: it overrides a gate
    _archive(tmp_path / "code.tar.gz")

    sign_in(page, "ines", "correct horse battery")
    page.goto("/projects/")
    page.select_option("#id_team", label="Climate")
    page.fill("#id_name", "ocean model")
    page.fill("#id_target_gpus", "MI300X")
    page.click("form.card button[type=submit]")
    page.wait_for_url("**/projects/*/")  # a new project opens on its own page
    project_url = page.url
    page.set_input_files("#archive", str(tmp_path / "code.tar.gz"))
    page.click("form:has(#archive) button[type=submit]")
    page.wait_for_selector("tr[data-source] >> text=Ready", timeout=60_000)

    page.click("text=Open the roadmap")
    phase1 = page.locator('section[data-phase="1"]')
    assert phase1.get_attribute("data-status") == "active"
    assert page.locator('section[data-phase="2"]').get_attribute("data-status") == "not_started"
    _shot(page, "roadmap-home")

    # The task's own button runs the scan with the project's defaults.
    phase1.locator('[data-task="assess-porting"] button[data-start]').click()
    page.wait_for_selector('#job-status [data-status="succeeded"]', timeout=90_000)
    page.goto(project_url + "roadmap/")
    assert (
        phase1.locator('[data-criterion="scan_of_current_code"]').get_attribute("data-verdict")
        == "passed"
    )
    assert phase1.locator('[data-task="assess-porting"]').get_attribute("data-state") == "done"
    # The scan finds nothing unsupported in this kernel: no API decision is owed.
    assert (
        phase1.locator('[data-criterion="unsupported_apis_decided"]').get_attribute("data-verdict")
        == "passed"
    )
    assert (
        phase1.locator('[data-criterion="libraries_compared"]').get_attribute("data-verdict")
        == "failed"
    )
    _shot(page, "roadmap-gate")

    # No second GPU here: the team overrides the comparison, saying why.
    _override(
        page, 1, "libraries_compared", "the MI300X arrives next month; vendor figures until then"
    )
    page.wait_for_selector('[data-override="libraries_compared"]')

    # The checklist: hardware comes from the data (MI300X is gfx942, on ROCm's list);
    # the team answers the rest.
    hardware = page.locator('tr[data-question="hardware"]')
    assert "yes" in hardware.inner_text() and "data" in hardware.inner_text()
    for question in ("performance", "toolchain", "maintenance"):
        row = page.locator(f'tr[data-question="{question}"]')
        row.locator('select[name="answer"]').select_option("yes")
        row.locator('input[name="note"]').fill("agreed in the kickoff")
        row.locator("button", has_text="Save").click()
        page.wait_for_selector(f'tr[data-question="{question}"] >> text=team')

    assert page.locator('section[data-phase="1"]').get_attribute("data-status") == "done"
    assert page.locator('section[data-phase="2"]').get_attribute("data-status") == "active"
    assert GateOverride.objects.get().by == user

    with page.expect_download() as download:
        page.click('a[data-report="pdf"]')
    pdf = download.value.path()
    assert Path(pdf).read_bytes().startswith(b"%PDF")
    page.click('a[data-report="html"]')
    assert "vendor figures until then" in page.content()
    _shot(page, "roadmap-report")
