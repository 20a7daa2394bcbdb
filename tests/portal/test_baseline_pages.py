"""The job page pins baselines and shows verdicts; the dashboard shows open regressions."""

from __future__ import annotations

import pytest
from django.test import Client

from results import services
from results.models import Baseline, Verdict
from teams.choices import Role
from tests.factories import add_member, make_project, make_user
from tests.results.helpers import environment, sampled_job

pytestmark = pytest.mark.django_db


@pytest.fixture
def scope(team):
    return make_project(team), environment("box-1")


def test_the_pin_button_makes_the_job_the_baseline(member_client, team, scope):
    job = sampled_job(team, *scope)
    assert 'id="pin-baseline"' in member_client.get(f"/jobs/{job.pk}/").content.decode()
    response = member_client.post(f"/jobs/{job.pk}/baseline/", follow=True)
    assert Baseline.objects.get().job == job
    assert "is now the baseline of gemm" in response.content.decode()


def test_a_viewer_cannot_pin_a_baseline(team, scope):
    viewer = make_user("vera")
    add_member(team, viewer, Role.VIEWER)
    client = Client()
    client.force_login(viewer)
    job = sampled_job(team, *scope)
    client.post(f"/jobs/{job.pk}/baseline/")
    assert not Baseline.objects.exists()


def test_a_job_without_a_project_says_why_it_cannot_be_pinned(member_client, team, scope):
    job = sampled_job(team, None, scope[1])
    html = member_client.get(f"/jobs/{job.pk}/").content.decode()
    assert "A baseline needs a project" in html and 'id="pin-baseline"' not in html
    member_client.post(f"/jobs/{job.pk}/baseline/")
    assert not Baseline.objects.exists()


def test_the_job_page_shows_each_verdict_with_its_numbers(member_client, team, scope):
    base = sampled_job(team, *scope, seed=1)
    services.pin_baseline(base)
    slow = sampled_job(team, *scope, level=85.0, seed=2)
    services.compare_job(slow.pk)
    html = member_client.get(f"/jobs/{slow.pk}/").content.decode()
    assert '<span class="verdict verdict-regressed">2 regressed</span>' in html
    ratio = Verdict.objects.filter(job=slow).first().ratio
    assert f"{ratio:.3f}" in html
    assert f'href="/jobs/{base.pk}/"' in html


def test_unpinning_removes_the_baseline(member_client, team, scope):
    [baseline] = services.pin_baseline(sampled_job(team, *scope))
    member_client.post(f"/baselines/{baseline.pk}/unpin/")
    assert not Baseline.objects.exists()


def test_the_dashboard_lists_open_regressions_until_acknowledged(member_client, team, scope):
    services.pin_baseline(sampled_job(team, *scope, seed=1))
    slow = sampled_job(team, *scope, level=85.0, seed=2)
    services.compare_job(slow.pk)
    html = member_client.get("/").content.decode()
    assert 'id="open-regressions"' in html and f'href="/jobs/{slow.pk}/#baseline"' in html
    member_client.post(f"/jobs/{slow.pk}/regressions/acknowledge/", {"next": "dashboard"})
    assert 'id="open-regressions"' not in member_client.get("/").content.decode()
