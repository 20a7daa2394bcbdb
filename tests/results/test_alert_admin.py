"""The alerting models' admin pages render for staff, and never show the signing secret."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from results.models import Alert, AlertEvent, AlertSettings, Delivery, DeliveryAttempt
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def test_the_alert_admin_pages_render_and_hide_the_secret(project: Any) -> None:
    config = AlertSettings.objects.create(project=project, events=[AlertEvent.REGRESSION])
    alert = Alert.objects.create(project=project, event=AlertEvent.REGRESSION)
    delivery = Delivery.objects.create(alert=alert, channel="webhook", target="https://h.test/")
    now = timezone.now()
    DeliveryAttempt.objects.create(
        delivery=delivery, number=1, started_at=now, finished_at=now, status_code=503
    )
    staff = make_user("root")
    staff.is_staff = staff.is_superuser = True
    staff.save()
    client = Client()
    client.force_login(staff)
    for model in ("alertsettings", "alert", "delivery", "deliveryattempt"):
        assert client.get(f"/admin/results/{model}/").status_code == 200, model
    for model, pk in (("alertsettings", config.pk), ("alert", alert.pk), ("delivery", delivery.pk)):
        page = client.get(f"/admin/results/{model}/{pk}/change/")
        assert page.status_code == 200, model
        assert config.secret not in page.content.decode()
