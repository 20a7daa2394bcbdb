"""Red team: callers without valid credentials are throttled on every endpoint, not only
the public ones.

DRF checks permissions before throttles, so a request with no token or a wrong one is
answered 401 before any scope counts it: live, 40 requests to /api/v1/jobs/ with no
token (ROCPATH_THROTTLE_ANON=30/minute) and 40 with made-up tokens were all answered 401,
none 429. Only /api/schema/ (AllowAny) ever reached the anon rate. Each guess still costs
a database lookup and nothing slows a token guesser down.
"""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


def _rates(settings, **rates: str) -> None:
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], **rates},
    }


def test_requests_without_a_token_past_the_anon_rate_get_429(settings):
    _rates(settings, anon="2/minute")
    client = APIClient()
    codes = [client.get("/api/v1/jobs/").status_code for _ in range(4)]
    assert 429 in codes, codes


def test_guessed_tokens_past_the_address_rate_get_429(settings):
    _rates(settings, anon="2/minute", address="3/minute")
    client = APIClient()
    codes = [
        client.get("/api/v1/jobs/", HTTP_AUTHORIZATION=f"Token {n:040d}").status_code
        for n in range(5)
    ]
    assert 429 in codes, codes
