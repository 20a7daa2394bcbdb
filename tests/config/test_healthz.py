"""/healthz answers what container health checks need: 200 when the database and the
broker answer, 503 naming the one that does not."""

from __future__ import annotations

import socket

import pytest
from django.test import Client


@pytest.mark.django_db
def test_healthz_is_200_without_sign_in_when_the_database_and_broker_answer():
    response = Client().get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "checks": {"database": "ok", "broker": "ok"}}
    assert "no-cache" in response["Cache-Control"]


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
