"""An inference-bench job page in Chromium, on the result of a real CPU run: the model card,
the case table and the three charts drawn, under the strict CSP with no violation and no
console error."""

from __future__ import annotations

import pytest

from teams.choices import Role
from tests.browser.steps import sign_in, watch
from tests.browser.test_csp import WATCH
from tests.factories import add_member, make_team, make_user
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
