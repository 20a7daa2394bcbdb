"""The three events that raise an alert, and the e-mail they send (Django's locmem backend)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.core import mail
from django.utils import timezone

from jobs.choices import JobStatus, LaunchType
from jobs.models import Schedule
from results import alerts
from results.models import Alert, AlertEvent, Delivery, DeliveryChannel, Verdict, VerdictKind
from results.signals import regression_found
from stack.kinds import noop
from tests.factories import make_job
from tests.results.smtp import smtp_server

pytestmark = pytest.mark.django_db


def _schedule(of: Any, **fields: Any) -> Schedule:
    fields.setdefault("next_run_at", timezone.now() + timedelta(hours=1))
    fields.setdefault("project", of)
    return Schedule.objects.create(
        name="nightly",
        team=of.team,
        kind=noop.KIND.name,
        cron="0 3 * * *",
        **fields,
    )


def _running_scheduled_job(project: Any) -> Any:
    schedule = _schedule(project)
    return make_job(
        project.team,
        status=JobStatus.RUNNING,
        kind=noop.KIND.name,
        launch_type=LaunchType.SCHEDULED,
        schedule=schedule,
    )


# --- a scheduled job that failed ---------------------------------------------------
@pytest.mark.parametrize("status", [JobStatus.FAILED, JobStatus.ERRORED])
def test_a_scheduled_job_that_fails_alerts_its_project_after_commit(
    alert_settings: Any, django_capture_on_commit_callbacks: Any, status: str
) -> None:
    job = _running_scheduled_job(alert_settings.project)
    with django_capture_on_commit_callbacks(execute=True):
        job.finish(status, error="rocblas-bench: exit 3\nmore")
        assert not Alert.objects.exists()  # not before the ending is committed
    alert = Alert.objects.get()
    assert alert.event == AlertEvent.SCHEDULED_JOB_FAILED
    assert alert.project_id == alert_settings.project_id
    assert alert.payload["job"]["id"] == job.pk
    assert alert.payload["job"]["status"] == status
    assert alert.payload["error"] == "rocblas-bench: exit 3\nmore"
    assert alert.payload["schedule"]["name"] == "nightly"


def test_a_scheduled_job_without_a_project_alerts_its_schedules_project(
    alert_settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    job = _running_scheduled_job(alert_settings.project)
    assert job.project_id is None
    with django_capture_on_commit_callbacks(execute=True):
        job.finish(JobStatus.FAILED, error="x")
    assert Alert.objects.get().project_id == alert_settings.project_id


def test_a_scheduled_job_that_succeeds_or_is_canceled_alerts_nobody(
    alert_settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    ok, canceled = (_running_scheduled_job(alert_settings.project) for _ in range(2))
    with django_capture_on_commit_callbacks(execute=True):
        ok.finish(JobStatus.SUCCEEDED)
        canceled.cancel("by alice")
    assert not Alert.objects.exists()


def test_a_manual_job_that_fails_alerts_nobody(
    alert_settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    job = make_job(
        alert_settings.project.team, status=JobStatus.RUNNING, project=alert_settings.project
    )
    with django_capture_on_commit_callbacks(execute=True):
        job.finish(JobStatus.FAILED, error="x")
    assert not Alert.objects.exists()


# --- a regression ------------------------------------------------------------------
_CASES = iter(range(1, 10**6))


def _verdict(job: Any, verdict: str, **fields: Any) -> Verdict:
    # Each its own case: a job has one verdict per case and metric (verdict_one_per_case).
    row = {
        "case_key": f"case-{next(_CASES)}",
        "benchmark": "gemm",
        "case": {"m": 4096, "dtype": "bf16"},
        "metric": "throughput",
        "unit": "TFLOP/s",
        "baseline_value": 100.0,
        "value": 88.0,
        "ratio": 0.88,
        "ratio_low": 0.86,
        "ratio_high": 0.90,
        "p_value": 1e-6,
    }
    return Verdict.objects.create(job=job, verdict=verdict, **{**row, **fields})


def test_the_regression_signal_alerts_with_the_open_regressions_of_the_job(
    alert_settings: Any,
) -> None:
    job = make_job(
        alert_settings.project.team, status=JobStatus.SUCCEEDED, project=alert_settings.project
    )
    regressed = _verdict(job, VerdictKind.REGRESSED)
    _verdict(job, VerdictKind.REGRESSED, acknowledged_at=timezone.now())
    _verdict(job, VerdictKind.UNCHANGED)
    regression_found.send(sender=Verdict, job_id=job.pk)
    alert = Alert.objects.get()
    assert alert.event == AlertEvent.REGRESSION
    assert [r["verdict_id"] for r in alert.payload["regressions"]] == [regressed.pk]
    assert alert.payload["regressions"][0]["ratio"] == 0.88
    assert alert.payload["job"]["id"] == job.pk


def test_a_regression_alert_has_one_line_per_case_not_per_metric(alert_settings: Any) -> None:
    job = make_job(
        alert_settings.project.team, status=JobStatus.SUCCEEDED, project=alert_settings.project
    )
    one = [
        _verdict(job, VerdictKind.REGRESSED, case_key="gemm-4096", metric=metric)
        for metric in ("pct_of_peak", "throughput", "time")
    ]
    other = _verdict(job, VerdictKind.REGRESSED, case_key="gemm-8192")
    regression_found.send(sender=Verdict, job_id=job.pk)
    payload = Alert.objects.get().payload
    assert payload["cases"] == 2 and len(payload["regressions"]) == 2
    first = next(r for r in payload["regressions"] if r["verdict_id"] == one[0].pk)
    assert [m["metric"] for m in first["metrics"]] == ["pct_of_peak", "throughput", "time"]
    assert any(r["verdict_id"] == other.pk for r in payload["regressions"])


def test_a_regression_on_a_short_history_says_so_in_the_alert(
    alert_settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    from results import services
    from tests.results.helpers import environment, sampled_job

    team, project, env = alert_settings.project.team, alert_settings.project, environment("b")
    services.pin_baseline(sampled_job(team, project, env, level=100.0, seed=1))
    slow = sampled_job(team, project, env, level=80.0, seed=2)
    with django_capture_on_commit_callbacks(execute=True):
        verdicts = services.compare_job(slow.pk)
    assert {v.verdict for v in verdicts} == {"regressed"}
    line = next(r for r in Alert.objects.get().payload["regressions"])
    assert line["warning"].startswith("1 run of history: at least 5")
    assert "(1 run of history: at least 5" in alerts._email_text(Alert.objects.get(), "x")


def test_the_regression_signal_may_name_the_verdicts(alert_settings: Any) -> None:
    job = make_job(
        alert_settings.project.team, status=JobStatus.SUCCEEDED, project=alert_settings.project
    )
    first, second = _verdict(job, VerdictKind.REGRESSED), _verdict(job, VerdictKind.REGRESSED)
    regression_found.send(sender=Verdict, job_id=job.pk, verdicts=[second])
    assert [r["verdict_id"] for r in Alert.objects.get().payload["regressions"]] == [second.pk]
    assert first.pk != second.pk


def test_a_regression_signal_without_open_regressions_alerts_nobody(alert_settings: Any) -> None:
    job = make_job(alert_settings.project.team, project=alert_settings.project)
    _verdict(job, VerdictKind.IMPROVED)
    regression_found.send(sender=Verdict, job_id=job.pk)
    assert not Alert.objects.exists()


# --- a schedule that stopped running -----------------------------------------------
def test_a_schedule_well_past_due_is_told_once(alert_settings: Any, settings: Any) -> None:
    due = timezone.now() - timedelta(seconds=settings.ROCPATH_SCHEDULE_STALL_S + 60)
    stalled = _schedule(alert_settings.project, next_run_at=due)
    assert alerts.check_stalled_schedules() == [stalled.pk]
    assert alerts.check_stalled_schedules() == []  # the next sweep sees the same stall
    alert = Alert.objects.get()
    assert alert.event == AlertEvent.SCHEDULE_STALLED
    assert alert.payload["schedule"]["id"] == stalled.pk
    assert alert.payload["late_s"] >= settings.ROCPATH_SCHEDULE_STALL_S + 60


def test_a_schedule_that_ran_and_stalled_again_is_a_new_stall(
    alert_settings: Any, settings: Any
) -> None:
    late = timedelta(seconds=settings.ROCPATH_SCHEDULE_STALL_S + 60)
    schedule = _schedule(alert_settings.project, next_run_at=timezone.now() - 2 * late)
    alerts.check_stalled_schedules()
    Schedule.objects.filter(pk=schedule.pk).update(next_run_at=timezone.now() - late)
    assert alerts.check_stalled_schedules() == [schedule.pk]
    assert Alert.objects.count() == 2


def test_disabled_on_time_or_projectless_schedules_are_not_stalled(
    alert_settings: Any, settings: Any
) -> None:
    long_ago = timezone.now() - timedelta(seconds=settings.ROCPATH_SCHEDULE_STALL_S + 60)
    _schedule(alert_settings.project, next_run_at=long_ago, enabled=False)
    _schedule(alert_settings.project, next_run_at=timezone.now() - timedelta(seconds=30))
    _schedule(alert_settings.project, next_run_at=long_ago, project=None)
    assert alerts.check_stalled_schedules() == []
    assert not Alert.objects.exists()


# --- e-mail ------------------------------------------------------------------------
def test_an_alert_is_mailed_through_djangos_mail_backend(alert_settings: Any) -> None:
    alert_settings.emails = ["ops@example.test", "perf@example.test"]
    alert_settings.save()
    job = make_job(
        alert_settings.project.team, status=JobStatus.SUCCEEDED, project=alert_settings.project
    )
    _verdict(job, VerdictKind.REGRESSED)
    regression_found.send(sender=Verdict, job_id=job.pk)
    delivery = Delivery.objects.get(channel=DeliveryChannel.EMAIL)
    assert alerts.deliver(delivery.pk) is None
    (message,) = mail.outbox
    assert message.to == ["ops@example.test", "perf@example.test"]
    assert message.subject == "[rocpath] Nightly GEMM: A regression against a baseline"
    assert "1 case regressed:" in message.body
    assert '- gemm {"m": 4096, "dtype": "bf16"}: throughput 100.0 → 88.0 TFLOP/s' in message.body
    delivery.refresh_from_db()
    assert delivery.status == "delivered"
    assert delivery.tries.get().error == ""


def test_a_mail_server_that_cannot_be_reached_is_tried_again(
    alert_settings: Any, settings: Any
) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", port
    alert = alerts.notify(alert_settings.project, AlertEvent.SCHEDULE_STALLED, {})
    delivery = alert.deliveries.get()
    assert alerts.deliver(delivery.pk) == 1.0
    attempt = delivery.tries.get()
    assert "ConnectionRefusedError" in attempt.error
    assert attempt.will_retry


@pytest.mark.process
def test_an_alert_is_mailed_over_smtp_to_a_real_server(alert_settings: Any, settings: Any) -> None:
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.DEFAULT_FROM_EMAIL = "rocpath@example.test"
    with smtp_server() as server:
        settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", server.port
        alert = alerts.notify(alert_settings.project, AlertEvent.SCHEDULE_STALLED, {"late_s": 5})
        delivery = alert.deliveries.get()
        assert alerts.deliver(delivery.pk) is None
    (message,) = server.messages
    assert message.sender == "rocpath@example.test"
    assert message.recipients == ["ops@example.test"]
    assert b"Subject: [rocpath] Nightly GEMM: A schedule stopped running" in message.data
    assert Delivery.objects.get(pk=delivery.pk).status == "delivered"
