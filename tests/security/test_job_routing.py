"""A team may only send its jobs to the queues an operator opened to it (jobs/routing.py).

Red team finding: ``hardware.queue`` took any well-formed name, so any team could send its
code to a queue an operator meant for a worker with ROCPATH_LOCAL_UNSANDBOXED=1.
"""

from __future__ import annotations

import ast

import pytest

from jobs.models import Job
from jobs.routing import allowed_queues, queue_errors
from tests.config.test_settings import _clean_env
from tests.factories import make_team
from tests.manage_helpers import manage

pytestmark = pytest.mark.django_db


def test_only_the_default_queue_is_open_when_no_queue_is_configured(team, settings):
    settings.ROCPATH_JOB_QUEUES = {}
    assert allowed_queues(team) == [settings.CELERY_TASK_DEFAULT_QUEUE]
    assert queue_errors({"queue": settings.CELERY_TASK_DEFAULT_QUEUE}, team) == []
    assert queue_errors({"queue": "unsandboxed"}, team) == [
        "queue: 'unsandboxed' is not a queue this team may use; allowed: "
        f"{settings.CELERY_TASK_DEFAULT_QUEUE} (ROCPATH_QUEUE and ROCPATH_JOB_QUEUES)"
    ]


def test_a_queue_opened_to_one_team_is_not_open_to_another(team, settings):
    other = make_team("other-team")
    settings.ROCPATH_JOB_QUEUES = {"*": ["gpu-mi300x"], other.slug: ["trusted"]}
    assert queue_errors({"queue": "gpu-mi300x"}, team) == []
    assert queue_errors({"queue": "trusted"}, other) == []
    assert (
        "'trusted' is not a queue this team may use" in queue_errors({"queue": "trusted"}, team)[0]
    )
    assert "trusted" not in allowed_queues(team)


def test_a_job_without_a_queue_or_with_a_malformed_one_is_left_to_validate_hardware(team):
    assert queue_errors({}, team) == []
    assert queue_errors({"queue": 7}, team) == []
    assert queue_errors(None, team) == []


def test_submitting_to_a_queue_the_team_may_not_use_is_a_400_naming_it(api, settings, no_enqueue):
    settings.ROCPATH_JOB_QUEUES = {"*": ["gpu-mi300x"]}
    response = api.post(
        "/api/v1/jobs/", {"kind": "noop", "hardware": {"queue": "unsandboxed"}}, format="json"
    )
    assert response.status_code == 400, response.content
    messages = response.json()["hardware"]
    assert any("'unsandboxed' is not a queue this team may use" in m for m in messages), messages
    assert any("gpu-mi300x" in m for m in messages), messages
    assert Job.objects.count() == 0
    allowed = api.post(
        "/api/v1/jobs/", {"kind": "noop", "hardware": {"queue": "gpu-mi300x"}}, format="json"
    )
    assert allowed.status_code == 201, allowed.content


@pytest.mark.process
def test_the_setting_takes_queues_for_every_team_and_per_team(tmp_path):
    env = _clean_env(
        DJANGO_SETTINGS_MODULE="config.settings.base",
        ROCPATH_VAR_DIR=str(tmp_path),
        ROCPATH_JOB_QUEUES="gpu-a:gpu-b,team-a=trusted,team-a=big,gpu-c",
    )
    code = "from django.conf import settings as s; print(s.ROCPATH_JOB_QUEUES)"
    result = manage(env, "shell", "-c", code)
    assert result.returncode == 0, result.stderr
    assert ast.literal_eval(result.stdout.strip().splitlines()[-1]) == {
        "*": ["gpu-a", "gpu-b", "gpu-c"],
        "team-a": ["trusted", "big"],
    }


@pytest.mark.parametrize("value", ["=q", "team-a=", "team-a=../x", "q;id"])
@pytest.mark.process
def test_a_bad_queue_setting_stops_start_up_with_its_name(tmp_path, value):
    env = _clean_env(
        DJANGO_SETTINGS_MODULE="config.settings.base",
        ROCPATH_VAR_DIR=str(tmp_path),
        ROCPATH_JOB_QUEUES=value,
    )
    result = manage(env, "check")
    assert result.returncode != 0 and "ROCPATH_JOB_QUEUES" in result.stderr
