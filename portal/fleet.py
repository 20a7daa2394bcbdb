"""The Workers pages: the fleet as a table, and one worker's full inventory.

Every signed-in user sees the whole fleet (it is shared infrastructure, and a team
choosing hardware needs to know what exists); the jobs on it are shown only where the
reader's teams may read them (jobs.fleet_view scopes them). What "live" and "gone" mean is
jobs.fleet_view's to say, so the page, the API and the job page agree.
"""

from __future__ import annotations

import json

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from jobs.fleet_view import fleet, member, with_visible_jobs
from jobs.models import Worker


@login_required
def worker_list(request: HttpRequest) -> HttpResponse:
    """The fleet, live first: two queries (the workers, the reader's jobs running on them)."""
    members = with_visible_jobs(fleet(), request.user)
    return render(
        request,
        "portal/workers.html",
        {
            "members": members,
            "live": sum(1 for m in members if m.state == "live"),
            "gone_s": settings.ROCPATH_WORKER_GONE_S,
            "beat_s": settings.ROCPATH_WORKER_BEAT_S,
        },
    )


@login_required
def worker_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One worker: its state, the reader's jobs on it, and its inventory, hiding nothing."""
    one = member(get_object_or_404(Worker, pk=pk), request.user)
    inventory = one.worker.inventory or {}
    shown = {"gpus", "software", "images"}
    return render(
        request,
        "portal/worker_detail.html",
        {
            "m": one,
            "w": one.worker,
            "other": {k: v for k, v in inventory.items() if k not in shown},
            "inventory_json": json.dumps(inventory, indent=2, sort_keys=True),
            "gone_s": settings.ROCPATH_WORKER_GONE_S,
        },
    )
