"""A team's first porting question, in a real browser: upload the CUDA code, scan it, read
the report down to the line."""

from __future__ import annotations

import io
import tarfile

import pytest

from jobs.models import Job
from stack.tools import which
from teams.choices import Role
from tests.browser.steps import sign_in
from tests.factories import add_member, make_project, make_team, make_user
from tests.waits import JOB_S

pytestmark = [
    pytest.mark.browser,
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.skipif(
        which("hipify-perl") is None,
        reason="hipify-perl is not installed (scripts/install-rocm-tools.sh installs it)",
    ),
]

KERNEL = """\
#include <cuda_runtime.h>

__global__ void axpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}

void launch(float* x, float* y, int n, cudaGraphExec_t exec, cudaGraphNode_t node) {
  float* d;
  cudaMalloc(&d, n * sizeof(float));
  axpy<<<(n + 255) / 256, 256>>>(2.0f, x, y, n);
  cudaGraphExecNodeSetParams(exec, node, nullptr);
  cudaFree(d);
}
"""
HEADER = "#pragma once\n#include <cuda_runtime.h>\nvoid launch(float*, float*, int);\n"


def _archive(path) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for name, text in (("solver/kernels.cu", KERNEL), ("solver/api.h", HEADER)):
            data = text.encode()
            member = tarfile.TarInfo(name)
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))


def test_a_team_uploads_its_code_scans_it_and_follows_the_report_to_the_line(page, tmp_path):
    team = make_team("Solvers")
    user = make_user("dana", password="correct horse battery")
    add_member(team, user, Role.MEMBER)
    project = make_project(team, "cfd")
    _archive(tmp_path / "code.tar.gz")

    sign_in(page, "dana", "correct horse battery")
    page.goto(f"/projects/{project.pk}/")
    page.set_input_files("#archive", str(tmp_path / "code.tar.gz"))
    page.click("form:has(#archive) button[type=submit]")
    source = page.locator("tr[data-source]")
    # The worker extracts it; the page follows until it is ready (no reload by hand).
    page.wait_for_selector("tr[data-source] >> text=Ready", timeout=JOB_S * 1000)
    assert "code.tar.gz" in source.inner_text()

    page.click('[data-step="hipify-scan"]')  # the project page's "Scan with HIPIFY"
    page.wait_for_selector('#job-status [data-status="succeeded"]', timeout=JOB_S * 1000)
    assert Job.objects.get().project == project

    page.goto(f"/projects/{project.pk}/")
    page.click("text=Porting report")
    tiles = page.inner_text("section.tiles")
    assert "2\nfiles (1 with device code)" in tiles
    lacks = page.locator("#top-unsupported tr", has_text="cudaGraphExecNodeSetParams")
    assert "CUDA RT API" in lacks.inner_text()
    lacks.locator("a.loc").first.click()
    page.wait_for_url("**/sources/**line=12**")
    assert "kernels.cu" in page.url
    assert "cudaGraphExecNodeSetParams" in page.inner_text("pre.source span.hl")

    page.go_back()
    page.click("#files th >> text=lines")
    assert "sort=lines" in page.url
    paths = page.locator("#files tbody tr td:first-child").all_inner_texts()
    assert paths == ["solver/kernels.cu", "solver/api.h"]  # most lines first
    page.click("#files th >> text=lines")
    assert page.locator("#files tbody tr td:first-child").all_inner_texts() == paths[::-1]
