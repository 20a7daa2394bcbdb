from __future__ import annotations

from typing import Any

import pytest

from results.models import AlertEvent, AlertSettings
from tests.factories import make_project


@pytest.fixture
def project(team: Any) -> Any:
    return make_project(team, "Nightly GEMM")


@pytest.fixture
def alert_settings(project: Any, settings: Any) -> AlertSettings:
    """Every event wanted, one e-mail recipient, no webhook yet; 127.0.0.1 may be called."""
    settings.ROCPATH_WEBHOOK_HOST_ALLOW = ["127.0.0.1/32"]
    settings.ROCPATH_ALERT_RETRY_BASE_S = 1
    return AlertSettings.objects.create(
        project=project, events=list(AlertEvent.values), emails=["ops@example.test"]
    )
