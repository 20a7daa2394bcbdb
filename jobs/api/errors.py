"""Error bodies of bounded size: a validation message may quote what was sent (a jsonschema
message quotes the value; an unknown-field message its name), so a 1.5 MB request once got a
9.5 MB answer. Each message is cut to MAX_MESSAGE_CHARS and each list or object of errors to
MAX_ERRORS entries, with a note saying how many were left out.

It is also where a request without valid credentials meets the throttles: see
counted_unauthenticated; and where a database that does not answer becomes a 503: see
DatabaseUnavailable.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import InterfaceError, OperationalError
from rest_framework import status
from rest_framework.exceptions import (
    APIException,
    AuthenticationFailed,
    NotAuthenticated,
    Throttled,
)
from rest_framework.views import exception_handler

logger = logging.getLogger(__name__)

MAX_MESSAGE_CHARS = 300
MAX_ERRORS = 20
# What a client is told to wait before trying again while the database is away: a
# PostgreSQL restart is back within a second or two (docs/reliability.md, Soak).
DATABASE_RETRY_AFTER_S = 5
# Refused, dropped or closed connections (a restart, a stop, a network cut); not a bad query.
DATABASE_UNAVAILABLE_ERRORS = (OperationalError, InterfaceError)


class DatabaseUnavailable(APIException):
    """The database did not answer: a 503 saying to come back, not Django's HTML 500.

    DRF turns ``wait`` into the Retry-After header, as it does for a 429.
    """

    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = "The database is unavailable; try again in a few seconds."
    default_code = "database_unavailable"
    wait = DATABASE_RETRY_AFTER_S


def bound_message(text: str) -> str:
    if len(text) <= MAX_MESSAGE_CHARS:
        return text
    return f"{text[:MAX_MESSAGE_CHARS]}… ({len(text) - MAX_MESSAGE_CHARS} more characters)"


def bound_errors(detail: Any) -> Any:
    """The same shape of errors (dicts, lists, strings), each part cut to its bound."""
    if isinstance(detail, dict):
        items = list(detail.items())
        bounded = {bound_message(str(k)): bound_errors(v) for k, v in items[:MAX_ERRORS]}
        if len(items) > MAX_ERRORS:
            bounded["…"] = [f"{len(items) - MAX_ERRORS} more fields with errors left out"]
        return bounded
    if isinstance(detail, list | tuple):
        bounded_list = [bound_errors(v) for v in detail[:MAX_ERRORS]]
        if len(detail) > MAX_ERRORS:
            bounded_list.append(f"… and {len(detail) - MAX_ERRORS} more errors left out")
        return bounded_list
    if isinstance(detail, str):
        return bound_message(detail)
    return detail


def counted_unauthenticated(exc: Exception, context: dict) -> Exception:
    """A 401 counted by the view's throttles, and a 429 instead once past a rate.

    DRF authenticates and checks permissions before it runs the throttles, so a request
    with no token or a wrong one was answered 401 before any scope counted it: a token
    guesser was never slowed down. Every such refusal comes through here, whatever the
    view, so here they are counted, as anonymous callers by address (a failed token leaves
    the request's user anonymous), and past the anon or address rate answered 429.
    """
    if not isinstance(exc, NotAuthenticated | AuthenticationFailed):
        return exc
    view, request = context.get("view"), context.get("request")
    if view is None or request is None:
        return exc
    try:
        view.check_throttles(request)
    except Throttled as throttled:
        return throttled
    return exc


def database_unavailable(exc: Exception, context: dict) -> Exception:
    """A lost database as a 503, wherever in the view it was met: authenticating the token
    (the first query of most requests), a permission, the view's own queries."""
    if not isinstance(exc, DATABASE_UNAVAILABLE_ERRORS):
        return exc
    # The 503 replaces the traceback Django would have logged: say here what it was.
    request = context.get("request")
    logger.warning(
        "database unavailable for %s: %s: %s",
        getattr(request, "path", "?"),
        type(exc).__name__,
        str(exc).strip().splitlines()[0] if str(exc).strip() else "",
    )
    return DatabaseUnavailable()


def bounded_exception_handler(exc: Exception, context: dict) -> Any:
    exc = counted_unauthenticated(database_unavailable(exc, context), context)
    response = exception_handler(exc, context)
    if response is not None and response.data is not None:
        response.data = bound_errors(response.data)
    return response
