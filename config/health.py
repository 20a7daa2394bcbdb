"""``/healthz``: whether this web process can reach the database and the broker, and (the
check config.urls passes in: jobs.health) whether the control worker still runs.

For container health checks and load balancers: 200 when all answer, 503 naming the one
that does not (the error's class only: the URL needs no sign-in, so it says no more).
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from config.celery import app

BROKER_TIMEOUT_S = 3
# The control worker's check: its verdict ("ok", "starting …" or "unavailable …") and the
# details of its beat. Passed in by config.urls: the foundation imports no app.
ControlCheck = Callable[[], tuple[str, dict]]


def _database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def _broker() -> None:
    with app.connection_for_write(settings.CELERY_BROKER_URL) as broker:
        broker.ensure_connection(max_retries=0, timeout=BROKER_TIMEOUT_S)


@never_cache
@require_GET
def healthz(request: HttpRequest, control_worker: ControlCheck | None = None) -> JsonResponse:
    checks: dict[str, str] = {}
    for name, check in (("database", _database), ("broker", _broker)):
        try:
            check()
        except Exception as exc:  # any failure is the answer, not a 500
            checks[name] = f"unavailable ({type(exc).__name__})"
        else:
            checks[name] = "ok"
    body: dict = {"checks": checks}
    if control_worker is not None:
        if checks["database"] != "ok":  # its beat lives there: the database's 503 says it
            checks["control_worker"] = "unknown (the database is unavailable)"
        else:
            try:
                checks["control_worker"], body["control_worker"] = control_worker()
            except Exception as exc:  # the table is missing (not migrated), the read failed
                checks["control_worker"] = f"unknown ({type(exc).__name__})"
    healthy = not any(value.startswith("unavailable") for value in checks.values())
    return JsonResponse(
        {"status": "ok" if healthy else "unavailable", **body},
        status=200 if healthy else 503,
    )
