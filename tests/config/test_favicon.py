"""Every page links a local favicon, and browsers' /favicon.ico finds it: no 404 per page."""

from django.contrib.staticfiles import finders
from django.test import Client


def test_the_dashboard_and_its_favicon_answer_without_404(user, settings):
    settings.WHITENOISE_USE_FINDERS = True  # serve static/ as collectstatic would
    client = Client()
    client.force_login(user)
    page = client.get("/")
    assert page.status_code == 200
    link = '<link rel="icon" href="/static/img/favicon.svg" type="image/svg+xml">'
    assert link in page.content.decode()
    assert finders.find("img/favicon.svg")
    icon = client.get("/static/img/favicon.svg")
    assert icon.status_code == 200 and b"<svg" in b"".join(icon.streaming_content)
    legacy = client.get("/favicon.ico")
    assert legacy.status_code == 302 and legacy["Location"] == "/static/img/favicon.svg"
