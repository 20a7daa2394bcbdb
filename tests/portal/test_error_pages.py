"""The 404 and 500 pages: styled, with a way back, and the 500 page safe with no context."""

from __future__ import annotations

import pytest
from django.http import HttpRequest, HttpResponse
from django.test import Client
from django.urls import include, path


def _boom(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("a view that fails")


# This module is also the URL configuration of the 500 test: the portal's pages and one
# that raises.
urlpatterns = [path("boom/", _boom), path("", include("config.urls"))]


def test_a_missing_page_is_the_styled_404_with_the_navigation(member_client, settings):
    settings.DEBUG = False
    response = member_client.get("/no-such-page/")
    html = response.content.decode()
    assert response.status_code == 404
    assert "Page not found" in html and "/no-such-page/" in html
    assert "css/rocpath.css" in html and 'class="topbar"' in html
    assert 'href="/projects/"' in html  # the signed-in user's navigation


def test_a_missing_page_for_a_visitor_is_styled_too(db, settings):
    settings.DEBUG = False
    response = Client().get("/static-nothing/at/all/")
    assert response.status_code == 404
    assert b"Page not found" in response.content and b"css/rocpath.css" in response.content


@pytest.mark.urls(__name__)
def test_a_failing_view_shows_the_styled_500_with_a_link_home(member_client, settings):
    settings.DEBUG = False
    member_client.raise_request_exception = False
    response = member_client.get("/boom/")
    html = response.content.decode()
    assert response.status_code == 500
    assert "Something went wrong" in html and "/static/css/rocpath.css" in html
    assert '<a class="brand" href="/">' in html


def test_the_500_page_renders_with_no_context_at_all():
    from django.template import loader

    html = loader.get_template("500.html").render()
    assert "Something went wrong" in html
    assert "{#" not in html and "server_error renders" not in html  # the comment stays hidden
