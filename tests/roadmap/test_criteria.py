"""Each exit criterion, on stored results crafted to pass, fail, or lack the data."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from jobs.choices import JobStatus, LaunchType
from results.models import Baseline
from roadmap import criteria
from roadmap.criteria import FAILED, NOT_NEEDED, PASSED, UNAVAILABLE, Facts
from roadmap.models import DecisionContext
from tests.factories import make_job
from tests.roadmap.conftest import (
    GAPS_CU,
    benchmark,
    compile_job,
    derived,
    environment,
    h200_document,
    ingest,
    ready_source,
    real_scan,
    scan,
)

pytestmark = pytest.mark.django_db


def verdict(name, project):
    return criteria.BY_NAME[name].check(Facts(project))


def test_a_scan_of_the_current_code_passes_and_an_older_source_does_not(project):
    old = ready_source(project)
    scan(project, old)
    assert verdict("scan_of_current_code", project).status == PASSED
    ready_source(project)  # new code arrives: the old scan no longer counts
    v = verdict("scan_of_current_code", project)
    assert v.status == FAILED and "No succeeded HIPIFY scan of the newest source" in v.detail


def test_a_project_without_a_source_is_told_to_add_one(project):
    v = verdict("scan_of_current_code", project)
    assert v.status == FAILED and v.fix.label == "Add a source"


def test_a_scan_with_nothing_unsupported_needs_no_decision(project):
    scan(project, ready_source(project), unsupported=0)
    assert verdict("unsupported_apis_decided", project).status == PASSED
    assert verdict("unsupported_zero_or_decided", project).status == PASSED


def test_libraries_compared_needs_two_gpus_with_a_case_in_common(project):
    nv = environment("nvidia", "NVIDIA H200")
    benchmark(project, nv, {4096: 650.0})
    assert verdict("libraries_compared", project).status == FAILED
    amd = environment("amd", "AMD Instinct MI300X")
    benchmark(project, amd, {2048: 500.0})
    v = verdict("libraries_compared", project)
    assert v.status == FAILED and "share no throughput case" in v.detail
    benchmark(project, amd, {4096: 700.0})
    v = verdict("libraries_compared", project)
    assert v.status == PASSED and "1 throughput cases in common" in v.detail


def test_compile_must_pass_for_every_target_of_the_project(project):
    project.target_gpus = ["MI300X", "gfx90a"]
    project.save()
    source = ready_source(project)
    compile_job(project, source, {"gfx942": {"passed": 4, "failed": 0}})
    v = verdict("compile_passes_every_target", project)
    assert v.status == FAILED and "gfx90a" in v.detail
    compile_job(
        project,
        source,
        {"gfx942": {"passed": 4, "failed": 0}, "gfx90a": {"passed": 4, "failed": 0}},
    )
    assert verdict("compile_passes_every_target", project).status == PASSED


def test_a_build_on_the_host_is_not_a_build_in_the_image(project):
    source = ready_source(project)
    compile_job(project, source, {"gfx942": {"passed": 1, "failed": 0}}, executor="local", image="")
    v = verdict("converted_code_builds_in_image", project)
    assert v.status == FAILED and "not in the team's image" in v.detail
    compile_job(project, source, {"gfx942": {"passed": 1, "failed": 0}})
    assert verdict("converted_code_builds_in_image", project).status == PASSED


def test_a_criterion_no_kind_serves_is_not_available_never_passed(project, monkeypatch):
    monkeypatch.setattr(criteria, "kinds_serving", lambda task: [])
    assert verdict("profile_exists", project).status == UNAVAILABLE
    assert verdict("tuned_within_10_percent", project).status == UNAVAILABLE


def test_a_profile_job_passes_the_profile_criterion(project):
    from stack.kinds import profile

    assert verdict("profile_exists", project).status == FAILED
    make_job(
        project.team,
        project=project,
        kind=profile.KIND.name,
        status=JobStatus.SUCCEEDED,
        finished_at=timezone.now(),
    )
    assert verdict("profile_exists", project).status == PASSED


def test_collectives_are_not_needed_on_one_gpu_and_wanted_on_several(project):
    assert verdict("collectives_measured", project).status == NOT_NEEDED
    DecisionContext.objects.create(project=project, multi_gpu=True)
    project.refresh_from_db()
    assert verdict("collectives_measured", project).status in (UNAVAILABLE, FAILED)


def test_nightly_green_needs_every_day_green(project, settings):
    # now, a day and two days before: three calendar days at any hour (an hour's offset
    # made two of them one date when the suite ran between 23:00 and midnight)
    settings.ROCPATH_GATE_GREEN_DAYS = 3
    now = timezone.now()
    for days_ago in (0, 1):
        make_job(project.team, project=project, launch_type=LaunchType.SCHEDULED,
                 status=JobStatus.SUCCEEDED, created_at=now - timedelta(days=days_ago))  # fmt: skip
    v = verdict("nightly_green", project)
    assert v.status == FAILED and "2 of the last 3 days" in v.detail
    make_job(project.team, project=project, launch_type=LaunchType.SCHEDULED,
             status=JobStatus.SUCCEEDED, created_at=now - timedelta(days=2))  # fmt: skip
    assert verdict("nightly_green", project).status == PASSED
    make_job(project.team, project=project, launch_type=LaunchType.SCHEDULED,
             status=JobStatus.FAILED, created_at=now)  # fmt: skip
    assert verdict("nightly_green", project).status == FAILED


def test_a_pinned_baseline_passes_the_baseline_criterion(project):
    assert verdict("baseline_set", project).status == FAILED
    job = benchmark(project, environment("amd", "MI300X"), {1024: 1.0})
    Baseline.objects.create(
        project=project, benchmark="gemm", fingerprint=job.environment.fingerprint, job=job
    )
    assert verdict("baseline_set", project).status == PASSED


def test_every_criterion_has_a_rationale_and_says_what_it_reads():
    for c in criteria.CRITERIA:
        assert c.rationale and c.reads and c.title
    assert {c.phase for c in criteria.CRITERIA} == {1, 2, 3, 4}


def test_an_alert_channel_passes_once_an_alert_was_delivered(project):
    from results.alert_models import Alert, AlertSettings, Delivery, DeliveryStatus

    assert verdict("alert_channel_tested", project).status == FAILED
    AlertSettings.objects.create(project=project, emails=["ops@example.org"])
    v = verdict("alert_channel_tested", project)
    assert v.status == FAILED and "send a test" in v.detail
    alert = Alert.objects.create(project=project, event="test")
    Delivery.objects.create(
        alert=alert,
        channel="email",
        target="ops@example.org",
        status=DeliveryStatus.DELIVERED,
        delivered_at=timezone.now(),
    )
    assert verdict("alert_channel_tested", project).status == PASSED


@pytest.mark.process  # a real receiver on 127.0.0.1
@pytest.mark.django_db(transaction=True)
def test_replacing_the_alert_channel_resets_the_criterion_until_the_new_one_is_reached(
    project, settings
):
    from results import alerts
    from results.alert_models import AlertEvent, AlertSettings, Delivery
    from tests.results.receiver import receiver

    settings.ROCPATH_WEBHOOK_HOST_ALLOW = ["127.0.0.1/32"]
    with receiver() as first, receiver() as second:
        alerts.save_settings(project, webhook_urls=[first.url], emails=[], events=[AlertEvent.TEST])
        config = AlertSettings.objects.get(project=project)
        alerts.send_test(config)
        for delivery in Delivery.objects.filter(alert__project=project):
            alerts.deliver(delivery.pk)  # what the alert worker does with the queued try
        assert verdict("alert_channel_tested", project).status == PASSED
        alerts.save_settings(
            project, webhook_urls=[second.url], emails=[], events=[AlertEvent.TEST]
        )
        v = verdict("alert_channel_tested", project)
        assert v.status == FAILED and "since replaced" in v.detail
        alerts.send_test(AlertSettings.objects.get(project=project))
        for delivery in Delivery.objects.filter(alert__project=project, target=second.url):
            alerts.deliver(delivery.pk)
        assert verdict("alert_channel_tested", project).status == PASSED


def test_a_scrape_a_day_old_no_longer_counts(project, settings, client):
    from results.models import MetricsScrape

    settings.ROCPATH_METRICS_TOKEN = "scrape-token-for-tests"
    client.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-token-for-tests")
    assert verdict("metrics_scraped", project).status == PASSED
    MetricsScrape.objects.filter(pk=1).update(at=timezone.now() - timedelta(days=2))
    v = verdict("metrics_scraped", project)
    assert v.status == FAILED and "no longer sees" in v.detail


def test_metrics_pass_once_a_scrape_succeeded(project, settings, client):
    assert verdict("metrics_scraped", project).status == FAILED
    settings.ROCPATH_METRICS_TOKEN = "scrape-token-for-tests"
    response = client.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-token-for-tests")
    assert response.status_code == 200
    assert verdict("metrics_scraped", project).status == PASSED


@pytest.mark.process  # the scan runner asks hipify-perl for its tables
def test_every_api_group_hip_lacks_needs_a_decision_device_functions_too(project):
    from teams.porting import record_decision

    real_scan(project, {"reduce.cu": GAPS_CU})
    v = verdict("unsupported_apis_decided", project)
    assert v.status == FAILED and "0 API groups HIP lacks decided, 2 open" in v.detail
    record_decision(project, api="cudaGraphExecNodeSetParams", decision="port", note="phase 2")
    # The shuffle alone still holds the gate: it once said "0 unsupported references".
    v = verdict("unsupported_apis_decided", project)
    assert v.status == FAILED and "1 open (2 references in code)" in v.detail
    record_decision(project, api="__shfl_down_sync", decision="port", note="64-lane mask")
    assert verdict("unsupported_apis_decided", project).status == PASSED
    assert verdict("unsupported_zero_or_decided", project).status == PASSED


def test_a_scan_from_before_api_groups_is_not_available_and_says_scan_again(project):
    scan(project, ready_source(project), unsupported=2)
    v = verdict("unsupported_apis_decided", project)
    assert v.status == UNAVAILABLE and "scan again" in v.detail


# --- the evidence rules, on the real H200 document and candidates derived from it ---------
def test_two_nvidia_models_open_no_comparison_gate(project):
    document = h200_document()
    ingest(project, document)
    ingest(project, derived(document, vendor="nvidia", model="NVIDIA H100 80GB HBM3"))
    v = verdict("libraries_compared", project)
    assert v.status == FAILED and "AMD candidate" in v.detail


def test_a_stale_benchmark_opens_no_comparison_gate(project, settings):
    document = h200_document()
    old = ingest(project, document)
    ingest(project, derived(document))
    assert verdict("libraries_compared", project).status == PASSED
    old.finished_at = timezone.now() - timedelta(days=settings.ROCPATH_EVIDENCE_MAX_AGE_DAYS + 1)
    old.save(update_fields=["finished_at"])
    v = verdict("libraries_compared", project)
    assert v.status == FAILED and "days old" in v.detail
    from roadmap.recommend import performance_ratio

    assert performance_ratio(Facts(project)) is None  # nor does it drive the answer


def test_bandwidth_rows_alone_open_no_comparison_gate(project):
    document = h200_document()
    document["measurements"] = [
        m for m in document["measurements"] if m["benchmark"] == "bandwidth"
    ]
    assert {m["metric"] for m in document["measurements"]} >= {"bandwidth", "time"}
    ingest(project, document)
    ingest(project, derived(document))
    v = verdict("libraries_compared", project)
    assert v.status == FAILED and "share no throughput case" in v.detail
