"""The roadmap on serving results: the phase-4 criterion inference-bench declares (goodput
at the SLO within N % of the pinned baseline) and the recommendation's serving reason,
both read from the summary of a real inference-bench sweep of a tiny random-weight Llama
on this machine's CPU, run once for the module. A slower or other GPU is that summary
with its figures scaled (``scaled``), as conftest's ``derived`` does for blas-bench."""

from __future__ import annotations

import copy

import pytest

from jobs.models import Job
from roadmap.criteria import BY_NAME, FAILED, NOT_NEEDED, PASSED, Facts
from roadmap.recommend import CUDA, ROCM, SERVING_WITHIN, recommend
from stack.kinds.inference_bench import KIND
from tests.portal.test_inference_bench_page import PARAMS, run_inference_bench
from tests.roadmap.conftest import environment, ingest

pytest.importorskip("transformers")

pytestmark = [pytest.mark.process, pytest.mark.django_db]  # the kind runs as `python -m stack`

# Two modes swept from one request in flight, doubled to 4, under an SLO the CPU keeps.
SWEEP = {
    **PARAMS,
    "concurrency": [1],
    "sweep": "concurrency",
    "sweep_max_concurrency": 4,
    "slo_ttft_ms": 60_000,
    "slo_tpot_ms": 10_000,
}
WITHIN = KIND.gate_criteria[0].within_pct
CRITERION = "serving_goodput_near_baseline"


@pytest.fixture(scope="module")
def document(tmp_path_factory) -> dict:
    document = run_inference_bench(tmp_path_factory.mktemp("serving"), SWEEP)
    serving = document["summary"]["serving"]
    assert {c["mode"] for c in serving["curves"]} == {"offline", "online"}
    assert all(c["slo_point"] is not None for c in serving["curves"]), serving
    return document


def scaled(document: dict, factor: float, **serving) -> dict:
    """The same sweep served ``factor`` times as fast (throughput and goodput per GPU at
    every step), its ``serving`` keys replaced by ``serving``."""
    doc = copy.deepcopy(document)
    doc["summary"]["serving"].update(serving)
    for curve in doc["summary"]["serving"]["curves"]:
        for point in curve["points"]:
            point["throughput_per_gpu"] = {
                k: (v * factor if v is not None else None)
                for k, v in point["throughput_per_gpu"].items()
            }
            if point["goodput_per_gpu"] is not None:
                point["goodput_per_gpu"] *= factor
    return doc


@pytest.fixture
def h100(db):
    return environment("nvidia", "NVIDIA H100")


@pytest.fixture
def mi300x(db):
    return environment("amd", "AMD Instinct MI300X")


def on_gpu(job: Job, env) -> Job:
    """The job as run on that GPU (environment): what a baseline's scope is."""
    job.environment = env
    job.save(update_fields=["environment"])
    return job


def pin(job: Job) -> None:
    from results.services import pin_baseline

    pin_baseline(job)


def verdict(project):
    return BY_NAME[CRITERION].check(Facts(project))


def test_a_project_that_never_benchmarked_serving_does_not_need_the_criterion(project):
    v = verdict(project)
    assert v.status == NOT_NEEDED and KIND.name in v.detail


def test_a_sweep_without_a_baseline_is_not_yet_and_links_to_pinning_it(project, document, h100):
    job = on_gpu(ingest(project, document), h100)
    v = verdict(project)
    assert v.status == FAILED and v.detail.startswith("Not yet: no inference-bench baseline")
    assert v.fix.label == f"Pin job {job.pk} as the baseline" and str(job.pk) in v.fix.url


def test_a_sweep_without_an_slo_is_not_yet(project, document, h100):
    on_gpu(ingest(project, scaled(document, 1.0, slo={})), h100)
    v = verdict(project)
    assert v.status == FAILED and "set no SLO" in v.detail and v.fix is not None


def test_the_baseline_itself_is_within_the_bar(project, document, h100):
    job = on_gpu(ingest(project, document), h100)
    pin(job)
    v = verdict(project)
    assert v.status == PASSED, v.detail
    assert "offline:" in v.detail and "online:" in v.detail
    assert v.detail.count("(level with it)") == 2 and "-0.0" not in v.detail


def test_goodput_a_little_below_the_baseline_passes_and_far_below_fails(project, document, h100):
    pin(on_gpu(ingest(project, document), h100))
    on_gpu(ingest(project, scaled(document, 1 - (WITHIN - 5) / 100)), h100)
    assert verdict(project).status == PASSED
    on_gpu(ingest(project, scaled(document, 1 - (WITHIN + 10) / 100)), h100)
    v = verdict(project)
    assert v.status == FAILED and f"{WITHIN + 10:.1f} % below" in v.detail
    assert f"at most {WITHIN:g} % below" in v.detail


def test_a_baseline_on_another_machine_does_not_count(project, document, h100, mi300x):
    pin(on_gpu(ingest(project, document), mi300x))
    on_gpu(ingest(project, document), h100)
    v = verdict(project)
    assert v.status == FAILED and "pinned on other machines" in v.detail


def test_a_sweep_at_another_slo_is_not_compared_with_the_baseline(project, document, h100):
    pin(on_gpu(ingest(project, document), h100))
    on_gpu(ingest(project, scaled(document, 1.0, slo={"ttft_ms": 1.0})), h100)
    v = verdict(project)
    assert v.status == FAILED and "differ in SLO" in v.detail


def test_a_sweep_of_another_workload_is_not_compared_with_the_baseline(project, document, h100):
    pin(on_gpu(ingest(project, document), h100))
    longer = copy.deepcopy(document["summary"]["serving"]["workload"])
    longer["input"] = "fixed:4096"
    on_gpu(ingest(project, scaled(document, 2.0, workload=longer)), h100)
    v = verdict(project)
    assert v.status == FAILED and "differ in workload" in v.detail


def reshaped(document: dict, **curves) -> dict:
    """The sweep with some modes' curves changed: ``mode=None`` drops that mode's curve,
    ``mode={"slo": {}}`` holds it to no bound (every step then counted no goodput and met
    no SLO, as a sweep does where none of the team's bounds applies to that mode), other
    keys (``load``) replace the curve's."""
    doc = copy.deepcopy(document)
    serving = doc["summary"]["serving"]
    kept = []
    for curve in serving["curves"]:
        change = curves.get(curve["mode"], {})
        if change is None:
            continue
        curve.update(change)
        if change.get("slo") == {}:
            for point in curve["points"]:
                point.update(goodput_per_gpu=None, slo_share=None, meets_slo=None)
        kept.append(curve)
    serving["curves"] = kept
    return doc


def test_a_mode_held_to_no_bound_is_skipped_not_failed(project, document, h100):
    # the team set TTFT and E2EL bounds only: offline keeps only TPOT, so held to none
    doc = reshaped(document, offline={"slo": {}})
    pin(on_gpu(ingest(project, doc), h100))
    on_gpu(ingest(project, scaled(doc, 1 - (WITHIN - 5) / 100)), h100)
    v = verdict(project)
    assert v.status == PASSED, v.detail
    assert "offline: held to no bound (offline keeps only the TPOT bound)" in v.detail
    assert "met the SLO at no load" not in v.detail and "online: " in v.detail


def test_no_mode_with_an_slo_in_common_is_not_yet(project, document, h100):
    doc = reshaped(document, offline={"slo": {}}, online=None)
    pin(on_gpu(ingest(project, doc), h100))
    v = verdict(project)
    assert v.status == FAILED and "no mode with an SLO in common" in v.detail, v.detail
    assert "offline: held to no bound" in v.detail and "slo_tpot_ms" in v.fix.label


def test_the_baseline_that_met_its_slo_nowhere_is_said_so(project, document, h100):
    base = copy.deepcopy(document)
    for curve in base["summary"]["serving"]["curves"]:
        if curve["mode"] == "online":
            curve["slo_point"] = None
            for point in curve["points"]:
                point.update(meets_slo=False, goodput_per_gpu=None)
    pin(on_gpu(ingest(project, base), h100))
    on_gpu(ingest(project, document), h100)
    v = verdict(project)
    assert v.status == FAILED and "online: the baseline met the SLO at no load it tried" in v.detail
    assert "offline: " in v.detail and "offline: the baseline met" not in v.detail


def test_a_rate_sweep_is_not_compared_with_a_concurrency_baseline(project, document, h100):
    pin(on_gpu(ingest(project, document), h100))
    on_gpu(ingest(project, reshaped(document, online={"load": "rate"})), h100)
    v = verdict(project)
    assert "online: not compared" in v.detail and "swept rate" in v.detail, v.detail
    assert v.status == PASSED  # offline, on the same load, is level with the baseline
    on_gpu(ingest(project, reshaped(document, online={"load": "rate"}, offline=None)), h100)
    v = verdict(project)
    assert v.status == FAILED and "no mode swept on the same kind of load" in v.detail


def tight(document: dict, pct: float = 1.0) -> dict:
    """The sweep with every step's output per GPU known to ``pct`` % (a long run's
    interval; the tiny CPU sweep's few requests leave one too wide to weigh)."""
    doc = copy.deepcopy(document)
    for curve in doc["summary"]["serving"]["curves"]:
        for point in curve["points"]:
            t = point["throughput_per_gpu"]
            if t["value"]:
                t.update(low=t["value"] * (1 - pct / 100), high=t["value"] * (1 + pct / 100))
    return doc


def serving_reason(project):
    rec = recommend(Facts(project))
    return rec, next((r for r in rec.reasons if r.kind == "serving"), None)


def test_a_candidate_serving_far_less_at_the_slo_weighs_for_cuda(project, document, h100, mi300x):
    on_gpu(ingest(project, tight(document)), h100)
    on_gpu(ingest(project, scaled(tight(document), SERVING_WITHIN - 0.3)), mi300x)
    rec, reason = serving_reason(project)
    assert reason is not None, "\n".join(rec.missing)
    assert reason.side == CUDA and "weighs against ROCm" in reason.text
    assert rec.verdict == CUDA  # a measured shortfall and no ROCm scenario
    assert set(rec.figures["serving_ratio"]) == {"offline", "online"}
    assert any("at the SLO in every mode" in w for w in rec.would_change)


def test_a_candidate_serving_as_much_at_the_slo_weighs_for_rocm(project, document, h100, mi300x):
    on_gpu(ingest(project, tight(document)), h100)
    on_gpu(ingest(project, tight(document)), mi300x)
    rec, reason = serving_reason(project)
    assert reason.side == ROCM and "weighs for ROCm" in reason.text
    assert rec.figures["serving_ratio"] == {"offline": 1.0, "online": 1.0}


def test_serving_measured_on_one_gpu_only_weighs_nothing_and_is_named_missing(
    project, document, h100
):
    on_gpu(ingest(project, document), h100)
    rec, reason = serving_reason(project)
    assert reason is None
    assert any("serving sweeps of the current GPU and an AMD candidate" in m for m in rec.missing)


def test_a_ratio_whose_interval_spans_the_bar_weighs_nothing(project, document, h100, mi300x):
    on_gpu(ingest(project, tight(document)), h100)
    on_gpu(ingest(project, scaled(tight(document), SERVING_WITHIN)), mi300x)  # ratio 0.9
    rec, reason = serving_reason(project)
    assert reason is None, reason
    said = next(m for m in rec.missing if m.startswith("a serving comparison"))
    assert "offline: " in said and "online: " in said and "lies across the bar of 0.9" in said


def test_a_shortfall_the_interval_cannot_confirm_weighs_nothing(project, document, h100, mi300x):
    # 0.6 of the current GPU's output, but each side known only to 40 %: 0.9 is inside
    on_gpu(ingest(project, tight(document, 40)), h100)
    on_gpu(ingest(project, scaled(tight(document, 40), 0.6)), mi300x)
    rec, reason = serving_reason(project)
    assert reason is None, reason
    assert rec.figures["serving_ratio"] == {"offline": 0.6, "online": 0.6}
    assert any("lies across the bar of 0.9" in m for m in rec.missing), rec.missing


def without_intervals(document: dict) -> dict:
    doc = copy.deepcopy(document)
    for curve in doc["summary"]["serving"]["curves"]:
        for point in curve["points"]:
            point["throughput_per_gpu"].update(low=None, high=None)
    return doc


def test_a_ratio_without_an_interval_weighs_nothing(project, document, h100, mi300x):
    on_gpu(ingest(project, without_intervals(document)), h100)
    on_gpu(ingest(project, without_intervals(scaled(document, 2.0))), mi300x)
    rec, reason = serving_reason(project)
    assert reason is None, reason
    assert any("the data cannot tell" in m for m in rec.missing), rec.missing


def test_a_ratio_above_the_bar_within_the_step_grid_weighs_nothing(project, document, h100, mi300x):
    # the current GPU broke the SLO at the step after its SLO point, where it served
    # twice as much: the candidate's 1.0 is sure only of half of what it may keep
    cur = tight(document)
    for curve in cur["summary"]["serving"]["curves"]:
        curve["slo_point"] = 0
        second = curve["points"][1]
        second["meets_slo"] = False
        first = curve["points"][0]["throughput_per_gpu"]
        second["throughput_per_gpu"] = {k: v * 2 for k, v in first.items()}
    cand = copy.deepcopy(cur)
    for curve in cand["summary"]["serving"]["curves"]:
        curve["points"] = curve["points"][:1]  # the candidate stopped at its SLO point
    on_gpu(ingest(project, cur), h100)
    on_gpu(ingest(project, scaled(cand, 1.0)), mi300x)
    rec, reason = serving_reason(project)
    assert reason is None, reason
    assert any("with the step grid" in m for m in rec.missing), rec.missing


def test_sweeps_with_no_mode_in_common_are_named_missing(project, document, h100, mi300x):
    on_gpu(ingest(project, reshaped(document, online=None)), h100)
    on_gpu(ingest(project, reshaped(document, offline=None)), mi300x)
    rec, reason = serving_reason(project)
    assert reason is None
    assert any(
        "no mode in common: AMD Instinct MI300X swept online, NVIDIA H100 offline" in m
        for m in rec.missing
    ), rec.missing
