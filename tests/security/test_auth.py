"""Sign-in and API credentials: lockout, throttling, token expiry and rotation, the demo user."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from teams.choices import Role
from teams.models import Membership
from tests.factories import add_member, make_user

PASSWORD = "correct horse battery"


@pytest.fixture
def member(team):
    user = make_user("mallory-target", password=PASSWORD)
    add_member(team, user, Role.MEMBER)
    return user


def _sign_in(client: Client, username: str, password: str, path: str = "/accounts/login/"):
    return client.post(path, {"username": username, "password": password})


def _signed_in(response) -> bool:
    return response.wsgi_request.user.is_authenticated


# --- lockout ----------------------------------------------------------------------
def test_25_wrong_passwords_lock_the_account_and_the_right_one_is_then_refused(member, settings):
    client = Client()
    for _ in range(25):
        response = _sign_in(client, member.username, "wrong")
        assert not _signed_in(response)
    response = _sign_in(client, member.username, PASSWORD)
    assert not _signed_in(response)
    assert response.status_code == 429
    text = response.content.decode()
    assert "locked" in text.lower() and str(settings.AXES_FAILURE_LIMIT) in text


def test_the_lock_holds_from_the_failure_limit_on(member, settings):
    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        _sign_in(client, member.username, "wrong")
    assert _signed_in(_sign_in(Client(), member.username, PASSWORD))  # not yet locked
    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT):
        _sign_in(client, member.username, "wrong")
    assert not _signed_in(_sign_in(Client(), member.username, PASSWORD))


def test_a_locked_account_signs_in_again_after_the_cool_off(member, settings):
    from axes.models import AccessAttempt

    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT):
        _sign_in(client, member.username, "wrong")
    assert not _signed_in(_sign_in(client, member.username, PASSWORD))
    # The cool-off passes: the attempts are now older than it.
    AccessAttempt.objects.update(
        attempt_time=timezone.now() - settings.AXES_COOLOFF_TIME - timedelta(seconds=1)
    )
    assert _signed_in(_sign_in(client, member.username, PASSWORD))


def test_an_admin_unlocks_a_locked_account(member, settings):
    from axes.utils import reset

    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT):
        _sign_in(client, member.username, "wrong")
    assert not _signed_in(_sign_in(client, member.username, PASSWORD))
    reset(username=member.username)  # what the AccessAttempt admin's delete does
    assert _signed_in(_sign_in(client, member.username, PASSWORD))


def test_one_users_lock_does_not_lock_another_user(member, team, settings):
    other = make_user("other", password=PASSWORD)
    add_member(team, other, Role.MEMBER)
    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT):
        _sign_in(client, member.username, "wrong")
    assert _signed_in(_sign_in(client, other.username, PASSWORD))


def test_the_admin_login_locks_too(team, settings):
    admin = make_user("root", password=PASSWORD)
    admin.is_staff = admin.is_superuser = True
    admin.save()
    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT):
        _sign_in(client, "root", "wrong", "/admin/login/")
    response = _sign_in(client, "root", PASSWORD, "/admin/login/")
    assert not _signed_in(response) and response.status_code == 429


# --- throttling -------------------------------------------------------------------
def _rates(settings, **rates: str) -> None:
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], **rates},
    }


def test_a_user_past_the_rate_gets_429_with_retry_after(api, settings):
    _rates(settings, user="3/minute")
    for _ in range(3):
        assert api.get("/api/v1/jobs/").status_code == 200
    response = api.get("/api/v1/jobs/")
    assert response.status_code == 429
    assert int(response["Retry-After"]) > 0
    assert "throttled" in response.json()["detail"].lower()


def test_each_user_has_their_own_allowance(api, team, settings):
    _rates(settings, user="2/minute")
    for _ in range(2):
        api.get("/api/v1/jobs/")
    assert api.get("/api/v1/jobs/").status_code == 429
    other = make_user("bob")
    add_member(team, other, Role.MEMBER)
    client = APIClient()
    client.force_authenticate(other)
    assert client.get("/api/v1/jobs/").status_code == 200


def test_one_address_is_throttled_across_users(team, settings):
    _rates(settings, address="3/minute")
    clients = []
    for n in range(4):
        user = make_user(f"sock{n}")
        add_member(team, user, Role.MEMBER)
        client = APIClient()
        client.force_authenticate(user)
        clients.append(client)
    assert [c.get("/api/v1/jobs/").status_code for c in clients] == [200, 200, 200, 429]


def test_a_forged_x_forwarded_for_does_not_get_a_new_allowance(db, settings):
    _rates(settings, anon="2/minute")
    client = APIClient()
    codes = [
        client.get("/api/schema/", HTTP_X_FORWARDED_FOR=f"10.0.0.{n}").status_code for n in range(3)
    ]
    assert codes == [200, 200, 429]


def test_a_forged_x_forwarded_for_does_not_escape_the_lockout(member, settings):
    client = Client()
    for n in range(settings.AXES_FAILURE_LIMIT):
        client.post(
            "/accounts/login/",
            {"username": member.username, "password": "wrong"},
            HTTP_X_FORWARDED_FOR=f"10.0.0.{n}",
        )
    response = client.post(
        "/accounts/login/",
        {"username": member.username, "password": PASSWORD},
        HTTP_X_FORWARDED_FOR="10.9.9.9",
    )
    assert not _signed_in(response)


def test_anonymous_callers_are_throttled_by_address(db, settings):
    _rates(settings, anon="2/minute")
    client = APIClient()
    codes = [client.get("/api/schema/").status_code for _ in range(3)]
    assert codes == [200, 200, 429]


# DRF answered 401 before any throttle counted (red team): live, 40 requests to /api/v1/jobs/
# with no token (anon rate 30/minute) and 40 with made-up tokens were all 401, none 429.
def test_requests_without_a_token_past_the_anon_rate_get_429(db, settings):
    _rates(settings, anon="2/minute")
    client = APIClient()
    codes = [client.get("/api/v1/jobs/").status_code for _ in range(4)]
    assert 429 in codes, codes


def test_guessed_tokens_past_the_address_rate_get_429(db, settings):
    _rates(settings, anon="2/minute", address="3/minute")
    client = APIClient()
    codes = [
        client.get("/api/v1/jobs/", HTTP_AUTHORIZATION=f"Token {n:040d}").status_code
        for n in range(5)
    ]
    assert 429 in codes, codes


def test_guessed_tokens_count_with_the_anonymous_calls_of_the_address(db, settings):
    _rates(settings, anon="3/minute")
    client = APIClient()
    assert client.get("/api/v1/jobs/").status_code == 401
    assert client.get("/api/v1/jobs/", HTTP_AUTHORIZATION="Token " + "1" * 40).status_code == 401
    assert client.get("/api/schema/").status_code == 200
    response = client.get("/api/v1/jobs/", HTTP_AUTHORIZATION="Token " + "2" * 40)
    assert response.status_code == 429
    assert int(response["Retry-After"]) > 0


def test_a_valid_token_is_not_held_back_by_anonymous_calls_from_its_address(user, settings):
    _rates(settings, anon="2/minute")
    anonymous = APIClient()
    for _ in range(3):
        anonymous.get("/api/v1/jobs/")
    assert anonymous.get("/api/v1/jobs/").status_code == 429
    assert _token_client(Token.objects.create(user=user)).get("/api/v1/jobs/").status_code == 200


def test_job_submission_has_its_own_stricter_rate(api, settings, no_enqueue):
    _rates(settings, submit="2/minute")
    for _ in range(2):
        assert api.post("/api/v1/jobs/", {"kind": "noop"}, format="json").status_code == 201
    assert api.post("/api/v1/jobs/", {"kind": "noop"}, format="json").status_code == 429
    assert api.get("/api/v1/jobs/").status_code == 200  # reading is not submitting


# --- tokens -----------------------------------------------------------------------
def _token_client(token: Token) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def test_a_token_older_than_its_ttl_is_refused_as_expired(user, settings):
    token = Token.objects.create(user=user)
    assert _token_client(token).get("/api/v1/jobs/").status_code == 200
    Token.objects.filter(pk=token.pk).update(
        created=timezone.now() - timedelta(days=settings.ROCPATH_TOKEN_TTL_DAYS, seconds=1)
    )
    response = _token_client(token).get("/api/v1/jobs/")
    assert response.status_code == 401
    assert "token expired" in response.json()["detail"].lower()


def test_a_token_rotates_through_the_api_and_the_old_one_stops_working(user):
    token = Token.objects.create(user=user)
    client = _token_client(token)
    response = client.post("/api/v1/token/rotate/")
    assert response.status_code == 201
    body = response.json()
    assert body["token"] != token.key and body["expires_at"]
    assert _token_client(token).get("/api/v1/jobs/").status_code == 401
    fresh = Token.objects.get(user=user)
    assert fresh.key == body["token"]
    assert _token_client(fresh).get("/api/v1/jobs/").status_code == 200


def test_the_token_page_says_when_the_token_expires(user):
    client = Client()
    client.force_login(user)
    client.post("/account/token/")
    token = Token.objects.get(user=user)
    html = client.get("/account/token/").content.decode()
    expires = token.created + timedelta(days=30)
    assert "expires" in html.lower() and f"{expires:%Y-%m-%d}" in html


# --- the demo user ----------------------------------------------------------------
def test_the_demo_user_is_an_ordinary_admin_of_the_demo_team(db, settings, tmp_path):
    settings.VAR_DIR = tmp_path
    call_command("bootstrap_demo", stdout=io.StringIO())
    from django.contrib.auth import get_user_model

    demo = get_user_model().objects.get(username="demo")
    assert not demo.is_superuser and not demo.is_staff
    membership = Membership.objects.get(user=demo)
    assert membership.team.slug == "demo" and membership.role == Role.ADMIN


def test_a_demo_superuser_from_an_older_bootstrap_is_demoted(db, settings, tmp_path):
    from django.contrib.auth import get_user_model

    settings.VAR_DIR = tmp_path
    get_user_model().objects.create_superuser(username="demo", email="", password="x")
    (tmp_path / "demo_password").write_text("x")
    call_command("bootstrap_demo", stdout=io.StringIO())
    demo = get_user_model().objects.get(username="demo")
    assert not demo.is_superuser and not demo.is_staff


def test_behind_one_trusted_proxy_the_address_it_saw_counts(settings):
    from django.test import RequestFactory

    from jobs.api.throttles import client_address

    request = RequestFactory().get(
        "/", REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="6.6.6.6, 203.0.113.7"
    )
    assert client_address(request) == "127.0.0.1"  # no proxy trusted: the header is ignored
    settings.ROCPATH_PROXY_COUNT = 1
    assert client_address(request) == "203.0.113.7"  # not the forged first entry


@pytest.mark.django_db
def test_every_portal_page_and_action_sends_a_stranger_to_the_sign_in_page():
    import re

    from portal.urls import urlpatterns

    stranger = Client()
    checked = []
    for pattern in urlpatterns:
        route = str(pattern.pattern)
        path = re.sub(r"<(?:int|str|path):\w+>", "1", route)
        path = re.sub(r"\(\?P<\w+>\[0-9\]\+\)", "1", path)  # re_path's numbers
        path = re.sub(r"\(\?P<\w+>(\w+)[^)]*\)", r"\1", path)  # its first alternative
        path = "/" + path.replace("\\.", ".").replace("^", "").replace("$", "")
        for method in (stranger.get, stranger.post):
            response = method(path)
            checked.append(path)
            assert response.status_code == 302, (method.__name__, path, response.status_code)
            assert response["Location"].startswith("/accounts/login/"), path
    assert "/jobs/1/baseline/" in checked
