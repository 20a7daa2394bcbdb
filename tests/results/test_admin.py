"""Staff can read baselines and verdicts in the admin."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from results import services
from results.models import Verdict
from tests.factories import make_project
from tests.results.helpers import environment, sampled_job

pytestmark = pytest.mark.django_db


def test_the_admin_lists_and_shows_baselines_and_verdicts(team):
    project, env = make_project(team), environment()
    [baseline] = services.pin_baseline(sampled_job(team, project, env, seed=1))
    services.compare_job(sampled_job(team, project, env, level=85.0, seed=2).pk)
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", password="pw"))
    verdict = Verdict.objects.first()
    for path in (
        "/admin/results/baseline/",
        "/admin/results/verdict/",
        f"/admin/results/baseline/{baseline.pk}/change/",
        f"/admin/results/verdict/{verdict.pk}/change/",
    ):
        assert client.get(path).status_code == 200, path
