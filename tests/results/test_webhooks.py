"""Webhooks: signed bodies, retries with backoff, the delivery log, the URL policy.

Every delivery here goes over a real socket to the receiver of tests/results/receiver.py
on 127.0.0.1, and is checked with an HMAC computed here, not by the code under test.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
import time
from typing import Any

import pytest
from django.utils import timezone

from results import alerts, webhooks
from results.models import (
    AlertEvent,
    Delivery,
    DeliveryAttempt,
    DeliveryChannel,
    DeliveryStatus,
)
from tests.results.receiver import receiver, self_signed

pytestmark = pytest.mark.django_db


def _webhook(alert_settings: Any, url: str) -> Delivery:
    alert_settings.webhook_urls = [url]
    alert_settings.emails = []
    alert_settings.save()
    alert = alerts.notify(alert_settings.project, AlertEvent.REGRESSION, {"n": 1})
    assert alert is not None
    return alert.deliveries.get()


def _time_passes(delivery: Delivery) -> None:
    """The wait the delivery asked for is over (the worker test waits for real)."""
    Delivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now())


@pytest.mark.process
def test_a_webhook_body_is_signed_with_hmac_sha256_over_the_timestamp_and_raw_body(
    alert_settings: Any,
) -> None:
    with receiver(200) as hook:
        delivery = _webhook(alert_settings, hook.url)
        assert alerts.deliver(delivery.pk) is None
    (request,) = hook.requests
    stamp = request.headers["X-Rocpath-Timestamp"]
    expected = hmac.new(
        alert_settings.secret.encode(), f"{stamp}.".encode() + request.body, hashlib.sha256
    ).hexdigest()
    assert request.headers["X-Rocpath-Signature"] == f"v1={expected}"
    assert abs(int(stamp) - time.time()) < 60
    assert request.path == "/hooks/rocpath?source=test"
    assert request.headers["X-Rocpath-Event"] == "regression"
    assert request.headers["X-Rocpath-Delivery"] == str(delivery.pk)
    assert request.headers["Content-Type"] == "application/json"
    assert request.body == delivery.body.encode()
    sent = json.loads(request.body)
    assert sent["event"] == "regression"
    assert sent["project"] == {"id": alert_settings.project_id, "name": "Nightly GEMM"}
    assert sent["data"] == {"n": 1}


@pytest.mark.process
def test_a_body_signed_with_another_secret_does_not_verify(alert_settings: Any) -> None:
    with receiver(200) as hook:
        delivery = _webhook(alert_settings, hook.url)
        alerts.deliver(delivery.pk)
    (request,) = hook.requests
    stamp = int(request.headers["X-Rocpath-Timestamp"])
    assert (
        webhooks.signature("another secret", stamp, request.body)
        != (request.headers["X-Rocpath-Signature"])
    )
    assert (
        webhooks.signature(alert_settings.secret, stamp + 1, request.body)
        != (request.headers["X-Rocpath-Signature"])
    )


@pytest.mark.process
def test_a_successful_delivery_logs_one_try_with_the_answer(alert_settings: Any) -> None:
    with receiver(204) as hook:
        delivery = _webhook(alert_settings, hook.url)
        alerts.deliver(delivery.pk)
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.DELIVERED
    assert delivery.attempts == 1
    assert delivery.delivered_at is not None
    (attempt,) = delivery.tries.all()
    assert (attempt.number, attempt.status_code, attempt.error) == (1, 204, "")
    assert attempt.started_at <= attempt.finished_at
    assert not attempt.will_retry


@pytest.mark.process
def test_a_receiver_that_fails_first_is_tried_again_after_a_doubling_wait(
    alert_settings: Any,
) -> None:
    with receiver(503, 502, 200) as hook:
        delivery = _webhook(alert_settings, hook.url)
        assert alerts.deliver(delivery.pk) == 1.0
        delivery.refresh_from_db()
        assert delivery.status == DeliveryStatus.RETRYING
        _time_passes(delivery)
        assert alerts.deliver(delivery.pk) == 2.0
        _time_passes(delivery)
        assert alerts.deliver(delivery.pk) is None
    assert len(hook.requests) == 3
    # The same bytes each time, so one signature scheme verifies all of them.
    assert len({r.body for r in hook.requests}) == 1
    log = list(DeliveryAttempt.objects.filter(delivery=delivery).order_by("number"))
    assert [(a.number, a.status_code, a.will_retry, a.retry_in_s) for a in log] == [
        (1, 503, True, 1.0),
        (2, 502, True, 2.0),
        (3, 200, False, None),
    ]
    assert log[0].error == "HTTP 503"
    assert log[0].response_excerpt == "answer 503 to request 1"
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.DELIVERED


@pytest.mark.process
def test_a_try_that_comes_before_its_time_sends_nothing(alert_settings: Any, settings: Any) -> None:
    settings.ROCPATH_ALERT_RETRY_BASE_S = 60
    with receiver(500, 200) as hook:
        delivery = _webhook(alert_settings, hook.url)
        assert alerts.deliver(delivery.pk) == 60.0
        assert alerts.deliver(delivery.pk) is None  # a duplicate message: not yet due
    assert len(hook.requests) == 1
    assert DeliveryAttempt.objects.filter(delivery=delivery).count() == 1


@pytest.mark.process
def test_retry_after_is_honoured_when_longer_than_the_backoff(alert_settings: Any) -> None:
    with receiver((429, {"Retry-After": "7"})) as hook:
        delivery = _webhook(alert_settings, hook.url)
        assert alerts.deliver(delivery.pk) == 7.0
    assert delivery.tries.get().status_code == 429


@pytest.mark.parametrize("status", [400, 401, 404, 410, 422])
@pytest.mark.process
def test_a_refusal_by_the_receiver_is_not_retried(alert_settings: Any, status: int) -> None:
    with receiver(status) as hook:
        delivery = _webhook(alert_settings, hook.url)
        assert alerts.deliver(delivery.pk) is None
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.FAILED
    attempt = delivery.tries.get()
    assert attempt.status_code == status
    assert "not retried" in attempt.error
    assert len(hook.requests) == 1


@pytest.mark.process
def test_a_redirect_is_not_followed(alert_settings: Any) -> None:
    with receiver((302, {"Location": "http://127.0.0.1:9/elsewhere"})) as hook:
        delivery = _webhook(alert_settings, hook.url)
        assert alerts.deliver(delivery.pk) is None
    attempt = delivery.tries.get()
    assert attempt.status_code == 302
    assert "redirects are not followed" in attempt.error


def test_no_answer_at_all_is_retried(alert_settings: Any) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    delivery = _webhook(alert_settings, f"http://127.0.0.1:{port}/hook")
    assert alerts.deliver(delivery.pk) == 1.0
    attempt = delivery.tries.get()
    assert attempt.status_code is None
    assert "ConnectionRefusedError" in attempt.error
    assert attempt.will_retry


@pytest.mark.process
def test_a_delivery_gives_up_after_the_last_try(alert_settings: Any, settings: Any) -> None:
    settings.ROCPATH_ALERT_MAX_ATTEMPTS = 2
    with receiver(500, 500, 500) as hook:
        delivery = _webhook(alert_settings, hook.url)
        assert alerts.deliver(delivery.pk) == 1.0
        _time_passes(delivery)
        assert alerts.deliver(delivery.pk) is None
        _time_passes(delivery)
        assert alerts.deliver(delivery.pk) is None  # failed: nothing more is tried
    assert len(hook.requests) == 2
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.FAILED
    assert [a.will_retry for a in delivery.tries.order_by("number")] == [True, False]


@pytest.mark.process
def test_a_loopback_receiver_is_refused_unless_the_operator_allows_it(
    alert_settings: Any, settings: Any
) -> None:
    settings.ROCPATH_WEBHOOK_HOST_ALLOW = []
    with receiver(200) as hook:
        delivery = _webhook(alert_settings, hook.url)
        assert alerts.deliver(delivery.pk) is None
    assert hook.requests == []
    attempt = delivery.tries.get()
    assert "a loopback address" in attempt.error
    assert "ROCPATH_WEBHOOK_HOST_ALLOW" in attempt.error
    assert Delivery.objects.get(pk=delivery.pk).status == DeliveryStatus.FAILED


@pytest.mark.parametrize(
    "url",
    ["ftp://127.0.0.1/hook", "file:///etc/passwd", "gopher://x/", "http://u:p@127.0.0.1/", "x"],
)
def test_urls_other_than_http_and_https_are_refused(url: str) -> None:
    with pytest.raises(webhooks.WebhookRefused):
        webhooks.check_url(url)


def test_notify_writes_one_delivery_per_target_and_queues_each_after_commit(
    alert_settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    alert_settings.webhook_urls = ["http://127.0.0.1:1/a", "https://127.0.0.1:2/b"]
    alert_settings.save()
    with django_capture_on_commit_callbacks() as queued:
        alert = alerts.notify(alert_settings.project, AlertEvent.REGRESSION, {"n": 2})
    assert alert is not None
    channels = sorted(alert.deliveries.values_list("channel", "target"))
    assert channels == [
        (DeliveryChannel.EMAIL, "ops@example.test"),
        (DeliveryChannel.WEBHOOK, "http://127.0.0.1:1/a"),
        (DeliveryChannel.WEBHOOK, "https://127.0.0.1:2/b"),
    ]
    assert len(queued) == 3


def test_nobody_is_told_of_an_event_the_project_did_not_ask_for(alert_settings: Any) -> None:
    alert_settings.events = [AlertEvent.SCHEDULE_STALLED]
    alert_settings.save()
    assert alerts.notify(alert_settings.project, AlertEvent.REGRESSION, {}) is None
    assert Delivery.objects.count() == 0


def test_an_unknown_event_is_an_error(alert_settings: Any) -> None:
    with pytest.raises(ValueError, match="unknown alert event"):
        alerts.notify(alert_settings.project, "anything", {})


@pytest.mark.parametrize(
    "url",
    [
        "http://localhost:9/hook",
        "http://[::1]:9/hook",
        "http://0x7f000001:9/hook",
        "http://[::ffff:127.0.0.1]:9/hook",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.1.2.3/hook",
        "http://0.0.0.0:9/hook",
    ],
)
def test_internal_addresses_in_any_spelling_are_refused(url: str, settings: Any) -> None:
    settings.ROCPATH_WEBHOOK_HOST_ALLOW = []
    with pytest.raises(webhooks.WebhookRefused, match="ROCPATH_WEBHOOK_HOST_ALLOW"):
        webhooks.resolve(url)


def test_an_operator_allows_an_internal_network_or_host_by_name(settings: Any) -> None:
    settings.ROCPATH_WEBHOOK_HOST_ALLOW = ["10.0.0.0/8", "localhost"]
    assert webhooks.resolve("http://10.1.2.3/hook") == ("10.1.2.3", 80, ["10.1.2.3"])
    assert "127.0.0.1" in webhooks.resolve("https://localhost/hook")[2]
    with pytest.raises(webhooks.WebhookRefused):
        webhooks.resolve("http://192.168.1.1/hook")


@pytest.mark.process
def test_https_checks_the_certificate_against_the_host_name(
    alert_settings: Any, settings: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.ROCPATH_WEBHOOK_HOST_ALLOW = ["localhost"]
    tls = self_signed(tmp_path)
    with receiver(200, tls=tls) as hook:
        delivery = _webhook(alert_settings, hook.url)
        assert alerts.deliver(delivery.pk) == 1.0  # not trusted: a passing failure
        assert "CERTIFICATE_VERIFY_FAILED" in delivery.tries.get().error
        monkeypatch.setenv("SSL_CERT_FILE", str(tls[0]))  # the operator trusts its CA
        _time_passes(delivery)
        assert alerts.deliver(delivery.pk) is None
    assert Delivery.objects.get(pk=delivery.pk).status == DeliveryStatus.DELIVERED
    assert hook.requests[0].headers["Host"].startswith("localhost:")
