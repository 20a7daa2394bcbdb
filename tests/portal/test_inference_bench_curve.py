"""The serving curve of inference-bench on the job page and on the compare page, on the
results of real sweeps: a tiny random-weight Llama served on this machine's CPU, its
concurrency doubled until throughput stopped rising or the SLO broke (run through the
stack CLI and stored by the worker's ingest, as tests/portal/test_inference_bench_page.py
does). The job page draws throughput per GPU against tokens/s per user with every
interval, rings the SLO point and says why each sweep stopped, beside the KV cache paged
and contiguous; the compare page overlays two machines' curves and prints
compare_at_slo's statements."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.urls import reverse

from jobs.models import Job
from stack.inference.sweep import compare_at_slo
from tests.factories import make_environment
from tests.portal.test_inference_bench_page import PARAMS, run_inference_bench, store

pytest.importorskip("transformers")

pytestmark = pytest.mark.process  # the kind runs as `python -m stack`

SWEEP = {
    **PARAMS,
    "requests": 16,
    "concurrency": [1],
    "sweep": "concurrency",
    "sweep_max_concurrency": 16,
    # Bounds a busy two-core CI machine keeps at concurrency 1 (at 100 ms TPOT some runs
    # broke the SLO at their first step), so each sweep has a curve to draw.
    "slo_ttft_ms": 10000,
    "slo_tpot_ms": 1000,
}
# A TPOT bound no CPU keeps: the first step breaks it and the sweep stops there.
UNMET = {**SWEEP, "modes": ["offline"], "slo_tpot_ms": 0.01}


@pytest.fixture(scope="module")
def swept(tmp_path_factory) -> dict:
    return run_inference_bench(tmp_path_factory.mktemp("sweep"), SWEEP)


@pytest.fixture(scope="module")
def swept_again(tmp_path_factory) -> dict:
    """A second sweep of the same workload and SLO: another machine's, once labelled."""
    return run_inference_bench(tmp_path_factory.mktemp("sweep-again"), SWEEP)


@pytest.fixture(scope="module")
def unmet(tmp_path_factory) -> dict:
    return run_inference_bench(tmp_path_factory.mktemp("sweep-unmet"), UNMET)


def on(job: Job, gpu: str, vendor: str = "nvidia") -> Job:
    """The job as if it ran on ``gpu``: the compare page names a column by its machine."""
    job.environment = make_environment(gpu, vendor)
    job.save(update_fields=["environment"])
    return job


def section(page: str, element_id: str) -> str:
    found = re.search(rf'<section class="card" id="{element_id}">(.*?)</section>', page, re.S)
    assert found, f"no #{element_id} on the page"
    return found[1]


def points(svg: str) -> list[tuple[str, str, str]]:
    """The chart's points: (curve, SLO standing, the body of its <g>)."""
    return re.findall(
        r'<g class="curve-point" data-curve="([^"]*)" data-slo="([^"]*)">(.*?)</g>', svg, re.S
    )


def test_the_job_page_draws_each_step_of_the_sweep_with_its_intervals_and_rings_the_slo_point(
    member_client, team, swept
):
    job = store(team, swept, SWEEP)
    page = member_client.get(reverse("portal:job-detail", args=[job.pk])).content.decode()
    serving = section(page, "serving")
    assert "SLO: TTFT ≤ 10,000 ms, TPOT ≤ 1,000 ms for 90 % of requests" in serving

    drawn = points(serving)
    curves = swept["summary"]["serving"]["curves"]
    assert [c["mode"] for c in curves] == ["offline", "online"]
    assert max(len(c["points"]) for c in curves) >= 2, [c["stopped"] for c in curves]
    for curve in curves:
        mine = [(slo, body) for name, slo, body in drawn if name == curve["mode"]]
        assert len(mine) == len(curve["points"]) >= 1, curve["stopped"]
        for i, (point, (slo, body)) in enumerate(zip(curve["points"], mine, strict=True)):
            assert f"<title>{curve['mode']}: concurrency {point['concurrency']}," in body
            # a whisker per axis wherever the step has an interval on it
            for axis, key in (("y", "throughput_per_gpu"), ("x", "tokens_per_s_per_user")):
                has = point[key]["low"] is not None and point[key]["high"] is not None
                assert (f'class="whisker-{axis}"' in body) == has, (axis, point)
            standing = "broke" if point["meets_slo"] is False else ""
            assert slo == ("point" if i == curve["slo_point"] else standing)

    stops = dict(re.findall(r'<li data-mode="([^"]*)">(.*?)</li>', serving, re.S))
    for curve in curves:
        said = unescape(stops[curve["mode"]])
        # a mode held to fewer bounds than the team's (offline: TPOT only) says which
        held = curve.get("slo", swept["summary"]["serving"]["slo"])
        assert ("(held to" in said) == (held != swept["summary"]["serving"]["slo"]), said
        if curve["slo_point"] is None:  # a loaded machine may break even its first step
            assert "no point meets the SLO" in said
        else:
            best = curve["points"][curve["slo_point"]]
            assert f"the SLO point is concurrency {best['concurrency']}," in said
        assert f"Stopped: {curve['stopped']['reason']}." in said


def test_beside_the_curve_the_kv_cache_per_request_paged_and_contiguous_and_the_saving(
    member_client, team, swept
):
    job = store(team, swept, SWEEP)
    page = member_client.get(reverse("portal:job-detail", args=[job.pk])).content.decode()
    memory = swept["summary"]["memory"]["paged_vs_contiguous"]
    kv = re.search(r'<div id="kv-memory">(.*?)</div>', section(page, "serving"), re.S)
    assert kv, "no KV memory beside the curve"
    rows = re.findall(
        r'<tr data-cache="([^"]*)"><td>[^<]*</td><td class="num">([\d.,]+) (GiB|MiB|KiB|bytes)'
        r'</td><td class="num">([^<]*)</td></tr>',
        kv[1],
    )
    assert [key for key, *_ in rows] == [
        "contiguous_model_max",
        "contiguous_longest",
        "paged",
        "exact",
    ]
    scale = {"GiB": 2**30, "MiB": 2**20, "KiB": 2**10, "bytes": 1}
    for key, shown, unit, batch in rows:
        exact = memory["request_bytes"][key]
        assert abs(float(shown.replace(",", "")) * scale[unit] - exact) <= 0.01 * exact
        assert batch == "—"  # off a GPU nothing says what memory is free
    assert f"needs <b>{memory['paged_saving'] * 100:.0f} % less</b> per request" in kv[1]
    assert f"model&#x27;s maximum length ({memory['model_max_len']:,} tokens)" in kv[1]
    held = swept["summary"]["memory"]["paged_in_use"]
    assert held, "the offline steps recorded no blocks in use"
    table = re.search(r'<table id="kv-in-use">(.*?)</table>', kv[1], re.S)
    shown = re.findall(r'<tr><td class="num">([\d,]+)</td><td class="num">([\d,]+)</td>', table[1])
    assert shown == [(f"{u['concurrency']:,}", f"{u['peak_blocks']:,}") for u in held]


def test_a_sweep_that_never_meets_its_slo_draws_its_points_hollow_and_rings_none(
    member_client, team, unmet
):
    job = store(team, unmet, UNMET)
    page = member_client.get(reverse("portal:job-detail", args=[job.pk])).content.decode()
    serving = section(page, "serving")
    (curve,) = unmet["summary"]["serving"]["curves"]
    assert curve["slo_point"] is None and curve["points"][0]["meets_slo"] is False
    drawn = points(serving)
    assert [slo for _, slo, _ in drawn] == ["broke"] * len(curve["points"])
    assert "breaks the SLO" in serving and "SLO point</text>" not in serving
    said = unescape(serving)
    assert "no point meets the SLO" in said and curve["stopped"]["reason"] in said


def test_the_compare_page_overlays_two_machines_curves_and_says_which_serves_more_at_the_slo(
    member_client, team, swept, swept_again
):
    h200 = on(store(team, swept, SWEEP), "H200")
    mi300x = on(store(team, swept_again, SWEEP), "MI300X", "amd")
    url = f"{reverse('portal:compare')}?jobs={h200.pk},{mi300x.pk}"
    page = member_client.get(url).content.decode()
    found = section(page, "serving-comparison")

    curves = {name for name, _, _ in points(found)}
    assert curves == {"H200 offline", "H200 online", "MI300X offline", "MI300X online"}
    # The statements are compare_at_slo's on the two summaries, the baseline (the older
    # job) second, each printed with the per GPU and per joule readings it leaves out.
    said = compare_at_slo(
        swept_again["summary"]["serving"], swept["summary"]["serving"], ("MI300X", "H200")
    )
    assert [s["mode"] for s in said] == ["offline", "online"]
    assert all(s["comparable"] for s in said)
    shown = re.findall(
        r'<div class="slo-statement(?: no-winner)?" data-mode="([^"]*)" data-comparable="yes"'
        r' data-winner="([^"]*)">\s*<p class="slo-text"><b>[^<]*</b>: ([^<]*)</p>',
        found,
    )
    assert [(mode, unescape(text)) for mode, _, text in shown] == [
        (s["mode"], s["text"]) for s in said
    ]
    assert [w for _, w, _ in shown] == [s["per_gpu"]["winner"] or "" for s in said]
    assert "per joule" in unescape(found)  # a CPU has no power reading: said, not hidden
    assert "MI300X (<a" in found and "against H200 (<a" in found


def test_the_compare_page_says_sweeps_under_different_slos_are_not_comparable(
    member_client, team, swept, unmet
):
    looser = on(store(team, swept, SWEEP), "H200")
    tighter = on(store(team, unmet, UNMET), "MI300X", "amd")
    url = f"{reverse('portal:compare')}?jobs={looser.pk},{tighter.pk}"
    found = section(member_client.get(url).content.decode(), "serving-comparison")
    (said,) = compare_at_slo(
        unmet["summary"]["serving"], swept["summary"]["serving"], ("MI300X", "H200")
    )
    assert said["comparable"] is False and said["mode"] == "offline"
    statement = re.search(
        r'<div class="slo-statement not-comparable" data-mode="offline" data-comparable="no"'
        r"[^>]*>(.*?)</div>",
        found,
        re.S,
    )
    assert statement, found
    assert '<span class="flag">not comparable</span>' in statement[1]
    assert said["text"] in unescape(statement[1]) and "SLO" in said["text"]


def test_a_compare_page_of_one_sweep_has_no_serving_section_as_there_is_nothing_to_compare(
    member_client, team, swept
):
    job = store(team, swept, SWEEP)
    page = member_client.get(f"{reverse('portal:compare')}?jobs={job.pk}").content.decode()
    assert 'id="columns"' in page and 'id="serving-comparison"' not in page
