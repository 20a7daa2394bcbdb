"""``/healthz``: whether this web process can reach the database and the broker.

For container health checks and load balancers: 200 when both answer, 503 naming the one
that does not (the error's class only: the URL needs no sign-in, so it says no more).
"""

from __future__ import annotations

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from config.celery import app

BROKER_TIMEOUT_S = 3


def _database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def _broker() -> None:
    with app.connection_for_write(settings.CELERY_BROKER_URL) as broker:
        broker.ensure_connection(max_retries=0, timeout=BROKER_TIMEOUT_S)


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    checks: dict[str, str] = {}
    for name, check in (("database", _database), ("broker", _broker)):
        try:
            check()
        except Exception as exc:  # any failure is the answer, not a 500
            checks[name] = f"unavailable ({type(exc).__name__})"
        else:
            checks[name] = "ok"
    healthy = all(value == "ok" for value in checks.values())
    return JsonResponse(
        {"status": "ok" if healthy else "unavailable", "checks": checks},
        status=200 if healthy else 503,
    )
