"""/healthz answers what container health checks need: 200 when the database and the
broker answer and the control worker beat lately, 503 naming the one that does not."""

from __future__ import annotations

import socket
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from jobs import health
from jobs.models import ControlBeat
from jobs.models.control_beat import record_beat


@pytest.fixture
def web_up_long(monkeypatch):
    """This web process started long ago: no start-up grace for the control worker."""
    monkeypatch.setattr(health, "STARTED_AT", timezone.now() - timedelta(hours=1))


@pytest.mark.django_db
def test_healthz_is_200_without_sign_in_when_the_database_broker_and_control_worker_answer(
    web_up_long,
):
    record_beat("jobs.dispatch_jobs", "control@host")
    response = Client().get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["checks"] == {"database": "ok", "broker": "ok", "control_worker": "ok"}
    assert "no-cache" in response["Cache-Control"]


@pytest.mark.django_db
def test_healthz_reports_the_age_of_the_control_workers_last_beat(web_up_long, settings):
    record_beat("jobs.dispatch_jobs")
    ControlBeat.objects.update(at=timezone.now() - timedelta(seconds=7))
    response = Client().get("/healthz")
    assert response.status_code == 200
    beat = response.json()["control_worker"]
    assert 7 <= beat["age_s"] <= 9 and beat["last_beat"]
    assert beat["stale_after_s"] == settings.ROCPATH_CONTROL_STALE_S


@pytest.mark.django_db
def test_healthz_is_503_naming_the_control_worker_when_its_last_beat_is_stale(
    web_up_long, settings
):
    record_beat("jobs.dispatch_jobs")
    record_beat("jobs.reap_stuck_jobs")
    stale = settings.ROCPATH_CONTROL_STALE_S + 120
    ControlBeat.objects.update(at=timezone.now() - timedelta(seconds=stale))
    response = Client().get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["checks"]["database"] == "ok" and body["checks"]["broker"] == "ok"
    assert body["checks"]["control_worker"].startswith(
        "unavailable (the control worker has not run for "
    )
    assert stale <= body["control_worker"]["age_s"] <= stale + 2


@pytest.mark.django_db
def test_healthz_is_503_when_the_control_worker_never_ran_in_a_long_lived_web_process(
    web_up_long,
):
    response = Client().get("/healthz")
    assert response.status_code == 503
    assert "never" in response.json()["checks"]["control_worker"]
    assert response.json()["control_worker"]["last_beat"] is None


@pytest.mark.django_db
def test_a_web_process_just_started_gives_the_control_worker_time_to_beat(monkeypatch):
    """`make run` starts the workers once the web answers, and a kept database holds an
    earlier run's old beat: neither is a control worker that is down."""
    monkeypatch.setattr(health, "STARTED_AT", timezone.now())
    assert Client().get("/healthz").status_code == 200  # no beat at all yet
    record_beat("jobs.dispatch_jobs")
    ControlBeat.objects.update(at=timezone.now() - timedelta(days=1))
    response = Client().get("/healthz")
    assert response.status_code == 200
    assert response.json()["checks"]["control_worker"].startswith("starting")


@pytest.mark.django_db
def test_healthz_is_503_naming_the_broker_when_nothing_listens_there(settings):
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # bound, never listening: connections are refused
        settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{port}/0"
        response = Client().get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable" and body["checks"]["database"] == "ok"
    assert body["checks"]["broker"].startswith("unavailable (")
