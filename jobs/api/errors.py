"""Error bodies of bounded size: a validation message may quote what was sent (a jsonschema
message quotes the value; an unknown-field message its name), so a 1.5 MB request once got a
9.5 MB answer. Each message is cut to MAX_MESSAGE_CHARS and each list or object of errors to
MAX_ERRORS entries, with a note saying how many were left out.

It is also where a request without valid credentials meets the throttles: see
counted_unauthenticated.
"""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import AuthenticationFailed, NotAuthenticated, Throttled
from rest_framework.views import exception_handler

MAX_MESSAGE_CHARS = 300
MAX_ERRORS = 20


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


def bounded_exception_handler(exc: Exception, context: dict) -> Any:
    response = exception_handler(counted_unauthenticated(exc, context), context)
    if response is not None and response.data is not None:
        response.data = bound_errors(response.data)
    return response
