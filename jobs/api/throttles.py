"""Request rates of the API, per scope (rates: ROCPATH_THROTTLE_*, docs/configuration.md).

- anon: callers without credentials, per address (the schema and docs are public).
- user: each signed-in user or token, whatever address it comes from.
- address: every caller from one address together, so many accounts on one machine do not
  multiply the allowance.
- submit: job submissions (create and rerun) per user, stricter, since each one queues work.
  The portal's submit form and a schedule's fires take from the same allowance
  (take_submit_allowance), so no door around the API multiplies it.

The address is client_address's, the same one django-axes locks sign-ins by. Past a rate the
answer is 429 with Retry-After. The rates are read when a request comes, not
when the module is imported, so a changed setting (a test's) takes effect.
"""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from django.conf import settings
from rest_framework.settings import api_settings
from rest_framework.throttling import AnonRateThrottle, SimpleRateThrottle, UserRateThrottle

if TYPE_CHECKING:  # rest_framework.views imports this module through the settings
    from rest_framework.request import Request
    from rest_framework.views import APIView


def client_address(request: Any) -> str:
    """The caller's address: the connection's, or with ROCPATH_PROXY_COUNT trusted proxies in
    front, the one the outermost of them saw (X-Forwarded-For read from the right).

    DRF's own get_ident believes the first X-Forwarded-For entry when NUM_PROXIES is unset,
    which any client can write, so every scope here (and django-axes) uses this instead.
    """
    remote = request.META.get("REMOTE_ADDR", "")
    proxies = settings.ROCPATH_PROXY_COUNT
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if proxies == 0 or not forwarded:
        return remote
    hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
    return hops[-min(proxies, len(hops))] if hops else remote


class _RateFromSettings:
    scope: str

    def get_rate(self) -> str | None:
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)

    def get_ident(self, request: Request) -> str:
        return client_address(request)


class AnonThrottle(_RateFromSettings, AnonRateThrottle):
    scope = "anon"


class UserThrottle(_RateFromSettings, UserRateThrottle):
    scope = "user"


class AddressThrottle(_RateFromSettings, SimpleRateThrottle):
    scope = "address"

    def get_cache_key(self, request: Request, view: APIView) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


class SubmitThrottle(_RateFromSettings, UserRateThrottle):
    scope = "submit"
    ACTIONS = ("create", "rerun")

    def allow_request(self, request: Request, view: APIView) -> bool:
        if request.method != "POST" or getattr(view, "basename", None) != "job":
            return True
        if getattr(view, "action", None) not in self.ACTIONS:
            return True
        return super().allow_request(request, view)


def take_submit_allowance(user: Any) -> int | None:
    """Count one submission of ``user`` against the submit scope, as the API would: None when
    it is within the rate, else the seconds to wait. The same cache key as SubmitThrottle's
    (per user), so the API, the portal's form and a schedule's fires share one allowance."""
    throttle = SubmitThrottle()
    # UserRateThrottle.allow_request, past SubmitThrottle's filter on the API's view: the
    # callers are a form and the scheduler, not a view; get_cache_key reads request.user.
    caller = SimpleNamespace(user=user, META={})
    if UserRateThrottle.allow_request(throttle, caller, None):  # type: ignore[arg-type]
        return None
    return max(1, math.ceil(throttle.wait() or 1))


def too_many_submissions(wait: int) -> str:
    """What the portal says past the submit rate (the form and the rerun button alike)."""
    rate = api_settings.DEFAULT_THROTTLE_RATES.get(SubmitThrottle.scope)
    return f"Too many submissions (at most {rate}): try again in {wait} seconds."
