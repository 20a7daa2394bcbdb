"""Artifacts download as attachments of a type no browser runs, sandboxed if opened anyway.

Red team finding: an artifact was served with the type its runner declared (or guessed
from its name), so a .js or .html artifact from our own origin could run as our pages'
script could. Both downloads (API and portal) share jobs.api.views.artifact_response.
"""

from __future__ import annotations

import pytest
from django.test import Client

from jobs import services
from jobs.choices import JobStatus
from jobs.models import Artifact
from tests.factories import make_job

pytestmark = pytest.mark.django_db


def _artifact(team, path: str, content_type: str, data: bytes = b"alert(document.cookie)"):
    job = make_job(team, status=JobStatus.SUCCEEDED)
    folder = services.artifact_dir(job.pk)
    folder.mkdir(parents=True)
    (folder / path).write_bytes(data)
    return Artifact.objects.create(
        job=job, path=path, size=len(data), sha256="0" * 64, content_type=content_type
    )


def _downloads(api, user, artifact):
    portal = Client()
    portal.force_login(user)
    yield api.get(f"/api/v1/jobs/{artifact.job_id}/artifacts/{artifact.pk}/download/")
    yield portal.get(f"/jobs/{artifact.job_id}/artifacts/{artifact.pk}/")


@pytest.mark.parametrize(
    ("path", "declared", "served"),
    [
        ("evil.js", "application/javascript", "application/octet-stream"),
        ("evil.js", "text/javascript", "text/plain; charset=utf-8"),
        ("page.html", "text/html", "text/plain; charset=utf-8"),
        ("image.svg", "image/svg+xml", "text/plain; charset=utf-8"),
        ("report.json", "application/json", "text/plain; charset=utf-8"),
        ("blob.bin", "application/octet-stream", "application/octet-stream"),
        ("plugin.swf", "application/x-shockwave-flash", "application/octet-stream"),
    ],
)
def test_an_artifact_is_an_attachment_of_a_type_no_browser_runs(
    api, user, team, path, declared, served
):
    artifact = _artifact(team, path, declared)
    for response in _downloads(api, user, artifact):
        assert response.status_code == 200
        assert response["Content-Type"] == served
        assert response["Content-Disposition"].startswith("attachment")
        assert response["Content-Security-Policy"] == "sandbox"
        assert response["X-Content-Type-Options"] == "nosniff"
        assert b"".join(response.streaming_content) == b"alert(document.cookie)"


def test_the_listing_still_says_what_the_runner_declared(api, team):
    artifact = _artifact(team, "page.html", "text/html")
    listing = api.get(f"/api/v1/jobs/{artifact.job_id}/artifacts/").json()
    assert listing["results"][0]["content_type"] == "text/html"
