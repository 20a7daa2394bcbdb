from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from teams.choices import Role
from tests.factories import add_member, make_team, make_user

pytest_plugins = ["tests.tiers", "tests.workers", "tests.slurmcluster"]


@pytest.fixture(autouse=True)
def _artifact_root(settings: Any, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Each test writes job folders under its own temporary root."""
    settings.ARTIFACT_ROOT = tmp_path_factory.mktemp("artifacts")


@pytest.fixture
def team(db: None) -> Any:
    return make_team("Alpha")


@pytest.fixture
def user(team: Any) -> Any:
    user = make_user("alice")
    add_member(team, user, Role.MEMBER)
    return user


@pytest.fixture
def api(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def member_client(user: Any) -> Client:
    """A Django test client signed in as a member of the team: the pages as its user sees
    them, without a browser (tests/browser's ``chromium`` and ``page`` are the real one)."""
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def no_enqueue(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record enqueues instead of talking to the broker, for tests of the web side alone."""
    sent: list[int] = []

    def record(job: Any) -> None:
        job.mark_queued("test-task")  # as enqueue does before it sends
        sent.append(job.pk)

    monkeypatch.setattr("jobs.services.submit.enqueue", record)
    return sent
