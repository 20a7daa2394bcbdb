"""An inference-bench job page in Chromium, on the result of a real CPU run: the model card,
the case table and the three charts drawn, under the strict CSP with no violation and no
console error; and a real sweep's serving curve on its job page and, run on two
machines, on the compare page with the statements at the SLO.
``ROCPATH_SCREENSHOTS=DIR`` keeps screenshots of the curve and the comparison."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from teams.choices import Role
from tests.browser.steps import sign_in, watch
from tests.browser.test_csp import WATCH
from tests.factories import add_member, make_environment, make_team, make_user
from tests.portal.test_inference_bench_curve import SWEEP
from tests.portal.test_inference_bench_page import CASES, run_inference_bench, store

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def document(tmp_path_factory) -> dict:
    return run_inference_bench(tmp_path_factory.mktemp("inference-bench"))


def test_the_inference_bench_page_draws_its_table_and_charts_with_no_csp_violation(page, document):
    team = make_team("Serving")
    user = make_user("frank", password="correct horse battery")
    add_member(team, user, Role.MEMBER)
    job = store(team, document)
    seen = watch(page, WATCH)
    console, errors, policies = seen.console, seen.errors, seen.policies

    sign_in(page, "frank", "correct horse battery")
    page.goto(f"/jobs/{job.pk}/")
    page.wait_for_selector(".chart svg")

    model = page.locator("#inference-model")
    assert model.is_visible() and "tiny-llama" in model.inner_text()
    assert page.locator("#random-weights").is_visible()
    table = page.locator("#inference-cases table")
    assert table.is_visible()
    rows = table.locator("tbody tr")
    assert [
        (rows.nth(i).get_attribute("data-mode"), int(rows.nth(i).get_attribute("data-concurrency")))
        for i in range(rows.count())
    ] == CASES
    assert table.locator("thead th").count() == 20

    charts = page.locator(".chart svg")
    assert charts.count() == 3
    titles = [charts.nth(i).locator(".title.plot_title").text_content() or "" for i in range(3)]
    assert [t.split(" against")[0] for t in titles] == [
        "Time to first token (TTFT)",
        "Time per output token (TPOT)",
        "Output throughput",
    ]
    for i in range(3):  # drawn, not an empty box: a size, and pygal's CSS applied
        box = charts.nth(i).bounding_box()
        assert box and box["width"] > 300 and box["height"] > 100
    fill = page.evaluate(
        "getComputedStyle(document.querySelector('.chart svg .plot .background')).fill"
    )
    assert fill == "rgb(255, 255, 255)"  # unstyled it would be black: the nonce let it through

    violations = page.evaluate("window.__csp || []")
    assert policies and all("script-src 'self'" in p for p in policies), policies
    assert violations == [], violations
    assert [m for m in console if m.startswith("error:")] == [] and errors == [], (console, errors)


@pytest.fixture(scope="module")
def swept(tmp_path_factory) -> dict:
    return run_inference_bench(tmp_path_factory.mktemp("sweep"), SWEEP)


def _keep(page, name: str) -> None:
    if folder := os.environ.get("ROCPATH_SCREENSHOTS"):
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)


def test_the_serving_curve_and_its_comparison_draw_with_no_csp_violation(page, swept):
    team = make_team("Serving")
    user = make_user("grace", password="correct horse battery")
    add_member(team, user, Role.MEMBER)
    jobs = []
    for gpu, vendor in (("H200", "nvidia"), ("MI300X", "amd")):  # one sweep, shown as two machines'
        job = store(team, swept, SWEEP)
        job.environment = make_environment(gpu, vendor)
        job.save(update_fields=["environment"])
        jobs.append(job)
    seen = watch(page, WATCH)

    sign_in(page, "grace", "correct horse battery")
    page.goto(f"/jobs/{jobs[0].pk}/")
    curve = page.locator("#serving svg.curve-chart")
    curve.wait_for()
    box = curve.bounding_box()
    assert box and box["width"] > 300 and box["height"] > 150
    modes = [c["mode"] for c in swept["summary"]["serving"]["curves"]]
    assert page.locator("#serving .serving-stops li").count() == len(modes)
    assert page.locator("#kv-memory tbody tr[data-cache]").count() == 4
    held = swept["summary"]["memory"]["paged_in_use"]
    assert page.locator("#kv-in-use tbody tr").count() == len(held) > 0
    assert page.locator("#paged-saving").is_visible()
    _keep(page, "inference-serving-curve")
    violations = page.evaluate("window.__csp || []")  # gathered afresh on each page

    page.goto(f"/compare/?jobs={jobs[0].pk},{jobs[1].pk}")
    section = page.locator("#serving-comparison")
    section.wait_for()
    statements = section.locator(".slo-statement")
    assert statements.count() == len(modes)
    for i in range(statements.count()):
        assert statements.nth(i).is_visible() and "MI300X" in statements.nth(i).inner_text()
    legend = section.locator("svg.curve-chart .legend text").all_text_contents()
    assert {f"{gpu} {mode}" for gpu in ("H200", "MI300X") for mode in modes} <= set(legend)
    _keep(page, "inference-serving-compare")

    violations += page.evaluate("window.__csp || []")
    assert seen.policies and all("script-src 'self'" in p for p in seen.policies)
    assert violations == [], violations
    errors = [m for m in seen.console if m.startswith("error:")]
    assert errors == [] and seen.errors == [], (seen.console, seen.errors)
