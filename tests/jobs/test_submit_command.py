"""`manage.py submit`: what a script can ask for, and the errors it gets."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from jobs.models import Job
from tests.factories import H200, make_worker


def test_a_script_submits_a_job_with_its_hardware_request(user):
    make_worker(gpus=[H200])  # a GPU job is routed to a live worker that has one
    out = io.StringIO()
    call_command(
        "submit", "noop", "--user", user.username, "--hardware", '{"gpu_count": 1}', stdout=out
    )
    job = Job.objects.get(pk=int(out.getvalue()))
    assert job.requested_hardware == {"gpu_count": 1} and job.created_by == user


@pytest.mark.parametrize(
    ("hardware", "message"),
    [('{"gpu_vendor": "intel"}', "gpu_vendor: must be amd or nvidia"), ("{", "not valid JSON")],
)
def test_a_bad_hardware_request_is_refused_saying_why(user, hardware, message):
    with pytest.raises(CommandError, match=message):
        call_command("submit", "noop", "--user", user.username, "--hardware", hardware)
    assert not Job.objects.exists()
